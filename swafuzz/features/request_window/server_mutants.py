"""Server mutants of the request window: changes in the release's own window code, patched
while a server-level Case with encoder replay runs (the patches: :mod:`.sglang_server`, which
imports SGLang; this module does not).

* ``server_slot_reset_next``: addendum §2.2 (a request slot that starts its window has every
  tag -1; ``RequestWindow.reset``): the release's reset clears the next slot's rows instead, so
  a reused slot keeps its last owner's tags and a live neighbour loses its history;
* ``server_layout_floor_own_row``: addendum §2.2 (a run's history reads the ``W`` positions
  before its first row, down to its floor), in the release's ``window_layout``: every row's
  floor is its own position, so no run reads history (the floor bug class of ledger entry
  ``short-tail-floor``, 0.5.21 / 0.5.22's tail floor).
"""

from __future__ import annotations

from swafuzz.targets.mutants import mutant

_PATCHES = "swafuzz.features.request_window.sglang_server"

mutant("server_slot_reset_next", level="server", kinds=("server_window",),
       patch=f"{_PATCHES}:slot_reset_next",
       source="addendum §2.2 (a slot starting its window has every tag -1), in the release's "
              "RequestWindow.reset (encoder replay)")
mutant("server_layout_floor_own_row", level="server", kinds=("server_window",),
       patch=f"{_PATCHES}:layout_floor_own_row",
       source="addendum §2.2 (history rows down to the run's floor; the floor bug class of "
              "short-tail-floor), in the release's window_layout (encoder replay)")
mutant("server_tail_floor_short", level="server", kinds=("server_window_tail",),
       patch=f"{_PATCHES}:tail_floor_short",
       source="addendum §2.4 (a late-layer tail shorter than W reads the rows written before "
              "the extend; ledger short-tail-floor, sgl-project/sglang PR 38798's tail), in the "
              "release's late_layer_tail_layout: the floor seq_len - tail_lens of 0.5.21 / "
              "0.5.22")
mutant("server_padding_slot_handed_out", level="server", kinds=("server_window",),
       patch=f"{_PATCHES}:padding_slot_handed_out",
       source="spec §9.5 (padded rows go to a dummy slot no request holds), in the release's "
              "ReqToTokenPool (its +1 padding row 0 in the free list): a request's window in "
              "the slot padded batches write")
