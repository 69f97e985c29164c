"""The radix cache's rows of the server-level hop table (hook ``sglang.server_hops``; plain data,
printed by ``swafuzz list --target sglang``): ``(ROWS, OLDER)``, rows as
:data:`swafuzz.targets.sglang.pipeline.hops.HOPS` and the 0.5.12 column as its ``OLDER_SHAPE``.
"""

ROWS = (
    ("tree cache with the radix cache on (server_radix)", "real",
     "the release's UnifiedRadixCache with FULL and SWA components and disable false: a waiting "
     "request matched each time the adder is offered it (init_next_round_input -> "
     "match_kv_cache / match_prefix), locked on admission (tree_cache.lock; 0.5.20 / 0.5.21: "
     "inc_lock_ref and its receipt), its prompt published after the EXTEND (checkpoint_kv_cache;"
     " before 0.5.22: maybe_cache_unfinished_req: insert over an existing path, tombstone recovery, the"
     " lock moved), released with checkpoint (release_kv_cache, the cache_finished_req path; "
     "before 0.5.22: is_insert; aborted: without), evicted under memory pressure by the "
     "release's allocation (evict_to_free_tokens -> evict_for_alloc) and whole after the run "
     "(evict); decode graphs replay through the release's graph runner a third of the time"),
    ("prefix-cache admission budget", "modelled",
     "the adder (a server process) is modelled: free tokens plus the tree's full / SWA "
     "evictable tokens, less the hits its admission locks"),
)

OLDER = {
    "tree cache with the radix cache on (server_radix)": (
        "refused", "0.5.12 has no unified radix cache (its SWARadixCache is not driven): "
        "config.disable_radix_cache false refused naming the field"),
    "prefix-cache admission budget": ("refused", "as above"),
}

HOPS = (ROWS, OLDER)
