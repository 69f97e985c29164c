"""The ``tail`` check (issue 12; addendum §5 T1-T3): on the late layers of EXTEND forwards,
paged or window, the store got ``sum(tail lens)`` int32 locations, one per K row (T1), equal to
``M[loc]`` of each request's last ``min(W, n)`` rows (paged) or the tail layout's workspace rows
(window) (T2, T3). It compares the target's window-path channel with the window oracle
(its channel, :mod:`features.request_window.channel`), like :mod:`features.request_window.checks`.
"""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.features.request_window.channel import expected
from swafuzz.features.request_window.lane import failed, fwd_label, window_pairs


@check("tail", defence=(
    "names the late-layer tail's rows and count (addendum T1-T3); a wrong tail row always also "
    "changes bytes that pool_bytes (paged pool) or window (workspace, ring, tags) audit, a wrong "
    "tail length hits the store's own row/location contract (contracts), and under a window the "
    "tail's write_loc values do not depend on which rows are the tail"))
def check_tail(case, obs, exp) -> list[Failure]:
    """T1-T3 on every late layer of an EXTEND forward (module docstring). Fires on
    ``tail_first_rows`` (T3) and ``tail_len_unchecked`` (A3 / T1); defence in depth (reason in
    its ``@check``)."""
    w = expected(exp)
    if w is None:
        return []
    pairs, _ = window_pairs(obs, exp, "tail")  # missing / extra forwards: window's finding
    fails: list[Failure] = []
    for o, e in pairs:
        for layer in e.tail_layers:
            if layer >= len(o.stores):
                fails.append(Failure("tail", f"{fwd_label(o)}: no store for late layer {layer}",
                                     "count", o.step, o.fwd))
                break
            s, want = o.stores[layer], e.locs[layer]
            # a prefill-graph tail's stores take the whole capacity block (tail_graphs.oracle)
            total = getattr(e, "tail_capacity", 0) or sum(e.tail_lens)
            problem = None
            if s.loc_dtype != "int32":
                problem = (f"tail locations are {s.loc_dtype}, expected int32 (T2)", "dtype")
            elif len(s.locs) != total or s.rows != total:
                problem = (f"{len(s.locs)} tail locations and {s.rows} K rows, the tail has "
                           f"{total} rows (tail lens {e.tail_lens}) (T1)", "count")
            elif s.locs != want:
                bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
                kind = "SWA slot M[loc]" if e.paged else "workspace row"
                problem = (f"{len(bad)} of {total} tail rows differ; first tail row {bad[0]}: "
                           f"expected {kind} {want[bad[0]]}, got {s.locs[bad[0]]} (T2/T3: each "
                           f"request's last min(W, n) rows)", "tail")
            if failed(fails, "tail", f"{fwd_label(o)} late layer {layer}", problem, o.step, o.fwd):
                break
    return fails
