"""The ``history`` check (issue 12; addendum §5 W5 at use).

W5: a history row of a window forward is valid iff its position ``p >= 0`` and ``p >=`` the
run's floor, and when a valid row is used the ring row it is copied from must hold that
position: ``tags[layer, history_src] == p`` (upstream ``RequestWindow.buffer`` asserts the same
as its strict invariant ``dsv41.swa_history_present``). The ``window`` check compares the bytes
the copy produced with the oracle's, which copies the ring row the Case names without asking
what that row holds; a target whose ring row says "position 7" while it serves as position 3's
history agrees with such an oracle whenever the bytes do. This check compares instead what the
target's ring said at the moment of use with what the Case says the row stands for.

Inputs, per window-path forward and target layer:

* target (``WinFwdObs.history_tags``, :mod:`features.request_window.engine`): the window's tags at the history
  source rows of the layout that layer's store used, read after the history copy and before the
  layer's commit (ints, one per history row, ``groups * W`` of them; -1 for an empty ring row
  or the zero row). What the target observably did, not its claim about validity: its own
  ``history_valid`` / ``history_pos`` are never read.
* oracle (``WinFwdExp.history``, :mod:`features.request_window.oracle`): per history row the position the Case
  determines (the run's first position ``- W + j``) when valid, else -1.

A valid row must read tag ``p``; an invalid row must read -1 (the zero row, or an empty row).
Forwards where either side recorded nothing (graph runners; the DSpark verify graph lane) are
skipped, and so is a layer whose layout has another number of history rows than the Case's (a
wrong group count): a missing forward, a wrong layout shape or location and a wrong byte are the
``window`` check's findings.

Proven by ``tags_deferred_to_step_end`` (:mod:`features.encoder_replay.mutants`): killed by this
check alone (kind ``replay_separate``).
"""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.features.request_window.channel import expected
from swafuzz.features.request_window.lane import fwd_label, window_pairs


@check("history")
def check_history(case, obs, exp) -> list[Failure]:
    """W5 at use (module docstring): the target's tags at the history rows it read equal the
    Case's positions (-1 where the row is invalid)."""
    if expected(exp) is None:
        return []
    pairs, _ = window_pairs(obs, exp, "history")  # missing / extra forwards: window's finding
    fails = []
    for o, e in pairs:
        got = getattr(o, "history_tags", None)
        if got is None or not e.history:
            continue
        for layer, (a, b) in enumerate(zip(got, e.history)):
            if len(a) != len(b):
                break  # another layout shape (groups): the window check's finding (W1, size)
            bad = [h for h, (x, y) in enumerate(zip(a, b)) if x != y]
            if bad:
                h = bad[0]
                W = case.pool.window
                what = (f"position {b[h]}" if b[h] >= 0 else "an invalid row (zero row)")
                fails.append(Failure("history", f"{fwd_label(o)} layer {layer}: {len(bad)} history "
                                     f"rows hold another position than they stand for at use; "
                                     f"first row {h} (group {h // W}) stands for {what}, its "
                                     f"source row's tag says {a[h]} (W5: tags[layer, "
                                     f"history_src] == history_pos)", "tags", o.step, o.fwd))
                break
    return fails
