"""Server mutants of the request window: changes in the release's own window code, patched
while a server-level Case with encoder replay runs (the patches: :mod:`.sglang_server`, which
imports SGLang; this module does not). Each row's source says the rule it breaks.
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

#: (name, kind, patch in swafuzz.features.request_window.sglang_server, source)
_SERVER_MUTANTS = (
    ("server_slot_reset_next", "server_window", "slot_reset_next",
     "addendum §2.2 (a slot starting its window has every tag -1), in the release's "
     "RequestWindow.reset (encoder replay)"),
    ("server_layout_floor_own_row", "server_window", "layout_floor_own_row",
     "addendum §2.2 (history rows down to the run's floor; the floor bug class of "
     "short-tail-floor), in the release's window_layout (encoder replay)"),
    ("server_tail_floor_short", "server_window_tail", "tail_floor_short",
     "addendum §2.4 (a late-layer tail shorter than W reads the rows written before the "
     "extend; ledger short-tail-floor, sgl-project/sglang PR 38798's tail), in the release's "
     "late_layer_tail_layout: the floor seq_len - tail_lens of 0.5.21 / 0.5.22"),
    ("server_padding_slot_handed_out", "server_window", "padding_slot_handed_out",
     "spec §9.5 (padded rows go to a dummy slot no request holds), in the release's "
     "ReqToTokenPool (its +1 padding row 0 in the free list): a request's window in the slot "
     "padded batches write"),
)
for _name, _kind, _patch, _source in _SERVER_MUTANTS:
    mutant(_name, level="server", kinds=(_kind,),
           patch=f"swafuzz.features.request_window.sglang_server:{_patch}", source=_source)
