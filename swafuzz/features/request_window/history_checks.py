"""The ``history`` check (addendum §5 W5 at use): a window forward's valid history row (position
``p >= 0`` and ``>=`` its run's floor) is copied from a ring row holding ``p``: ``tags[layer,
history_src] == p`` (upstream ``RequestWindow.buffer``'s strict ``dsv41.swa_history_present``);
an invalid row reads -1 (zero or empty row). Unlike the ``window`` check (bytes against an
oracle that copies the row the Case names), it compares the target's ring at use
(``WinFwdObs.history_tags``, after the history copy, before the commit; never the target's own
``history_valid`` / ``history_pos``) with the Case's positions (``WinFwdExp.history``); forwards
where a side recorded nothing (graph runners, the verify graph lane) and layers with another
history row count are skipped. Proven by ``tags_deferred_to_step_end`` (kind
``replay_separate``), this check alone."""

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
