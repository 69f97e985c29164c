"""Server mutants of the radix cache: the release's own tree-cache code with an upstream bug put
back, patched while a ``server_radix`` Case runs (the patches: :mod:`.sglang_server_mutants`,
which imports SGLang; this module does not). Each row's source names the fix it reverts.
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

#: (name, patch in swafuzz.features.radix_tree.sglang_server_mutants, source)
_SERVER_MUTANTS = (
    ("server_radix_lock_kept", "lock_kept",
     "lock references (a request's tree lock dropped exactly once when it leaves; the "
     "lock-accounting bug class of sgl-project/sglang PR 28161's review), in the release's "
     "release_kv_cache: the request's lock is left on its node, which never becomes evictable"),
    ("server_radix_insert_drops_swa_boundary", "insert_drops_swa_boundary",
     "sgl-project/sglang PR 29350 (UnifiedRadixCache) / PR 30845, PR 36909 (SWARadixCache): the "
     "insert carries the request's SWA eviction boundary; without it SWA pages the request "
     "already freed are cached as live SWA KV, in the release's SWAComponent "
     "prepare_for_caching_req / free_out_of_window_slots"),
    ("server_radix_row_not_repointed", "row_not_repointed",
     "sgl-project/sglang PR 29282 (request-owned full KV freed during an unfinished insert "
     "corrupts ownership) and sgl-project/mini-sglang PR 142 (the request's page table "
     "remapped to the tree's pages before its duplicates are freed): the request's "
     "req_to_token row left on the duplicates the insert freed, in the release's "
     "UnifiedRadixCache.checkpoint_into_tree"),
    ("server_radix_chunk_published_whole", "chunk_published_whole",
     "sgl-project/sglang PR 27572 (cache_unfinished_req keyed on the extend-phase fill_len "
     "instead of the committed KV length kv_committed_len): a chunked request's stash publishes "
     "positions it has not computed, in the release's UnifiedRadixCache.checkpoint"),
    ("server_radix_reprefill_cap_everywhere", "reprefill_cap_everywhere",
     "spec additions 0.5.23 (A13 / T5: a prefix hit re-prefills the window only where its SWA "
     "cannot be reused: the unified_kv ring, decoder SWA bounded replay; sglang 0.5.23's "
     "UnifiedRadixCache.swa_reprefill_tail_tokens gates the cap on them): the gate dropped, "
     "every match stops a window short and the request computes a shared prefix again (a lost "
     "share), in the release's swa_reprefill_tail_tokens"),
    ("server_radix_frontier_unaligned", "frontier_unaligned",
     "sgl-project/sglang PR 29860 sized the radix path's SWA frontier as pre_len - max(window, "
     "page); sglang 0.5.23 rounds that up to whole pages so a key ending at page_floor(pre_len) "
     "keeps a full window of live SWA (PR 34870 measured window 127 with page 64, a window "
     "that is no whole number of pages); the ledger's swa-frontier-unaligned-window is the "
     "0.5.22 bug: the rounding dropped, in the release's free_swa_out_of_window_slots, a page "
     "the key needs is freed and the next match of it comes up short (a lost share)"),
)
for _name, _patch, _source in _SERVER_MUTANTS:
    mutant(_name, level="server", kinds=("server_radix",),
           patch=f"swafuzz.features.radix_tree.sglang_server_mutants:{_patch}", source=_source)
