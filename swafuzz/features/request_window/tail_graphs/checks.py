"""The ``tail_graph`` check (addendum §5 T1, T4, §6 A3): per forward with ``tail_exec``, the
target's ``WinFwdObs.tail_graph`` (:mod:`features.request_window.tail_graphs.engine`) against
the tail-graph oracle's: the row bucket the late layers replayed (an IDLE DP rank's from
``max(rank_tokens)``; None: eager); A3: every late-layer store got as many K rows as locations
(an IDLE rank's none); T1 (prefill-graph tail): ``tail_capacity`` int32 locations, zero from
``real_rows_count`` on; T4: after the tail a store resolves the forward's own locations and the
non-padded count is the forward's again. Which slots the tail hits (T2/T3) and their bytes are
the ``tail`` / ``pool_bytes`` / ``window`` checks'. Proven by ``tail_graph_exit_keeps_tail``
and ``tail_graph_dp_own_bucket`` (this check alone); fires on ``tail_capacity_not_zeroed``."""

from __future__ import annotations

from swafuzz.checks.base import Failure, pair_by_forward
from swafuzz.checks.registry import check
from swafuzz.features.request_window.channel import expected, observed
from swafuzz.features.request_window.lane import failed


def _where(e) -> str:
    rank = ", IDLE rank" if e.idle else ""
    return f"step {e.step} fwd {e.fwd} (tail graph {e.exec}{rank})"


@check("tail_graph")
def check_tail_graph(case, obs, exp) -> list[Failure]:
    """See the module docstring."""
    w = expected(exp)
    want = getattr(w, "tail_graph", None) if w is not None else None
    if not want:
        return []
    # a missing forward is the window / tail checks' finding
    pairs, _, _ = pair_by_forward(observed(obs).forwards, want, obs.error)
    fails: list[Failure] = []
    for o, e in pairs:
        where = _where(e)
        info = getattr(o, "tail_graph", None)
        if info is None:
            fails.append(Failure("tail_graph", f"{where}: the target ran the forward without "
                                 "the tail under graphs", "path", e.step, e.fwd))
            break
        if info.get("bucket") != e.bucket:
            fails.append(Failure("tail_graph", f"{where}: late layers replayed bucket "
                                 f"{info.get('bucket')}, the Case determines {e.bucket} (None: "
                                 f"eager) for {e.real_rows} tail rows", "path", e.step, e.fwd))
            break
        problem = None
        for layer in e.late_layers:
            if layer >= len(o.stores):
                problem = (f"no store for late layer {layer}", "count")
                break
            s = o.stores[layer]
            if s.rows != len(s.locs):
                problem = (f"late layer {layer}: the store got {s.rows} K rows for "
                           f"{len(s.locs)} tail locations (A3: K sliced to the real rows)",
                           "count")
            elif e.idle and s.rows:
                problem = (f"late layer {layer}: an IDLE rank stored {s.rows} rows (it replays "
                           "the peer's bucket with no rows of its own)", "count")
            elif e.capacity and len(s.locs) != e.capacity:
                problem = (f"late layer {layer}: {len(s.locs)} locations, the prefill-graph "
                           f"tail's buffer has {e.capacity} rows (T1)", "count")
            elif e.capacity and s.loc_dtype != "int32":
                problem = (f"late layer {layer}: the capacity buffer is {s.loc_dtype} (T1: "
                           "int32)", "dtype")
            elif e.capacity and any(s.locs[e.real_rows:]):
                bad = [r for r in range(e.real_rows, len(s.locs)) if s.locs[r]]
                problem = (f"late layer {layer}: {len(bad)} buffer rows past real_rows_count "
                           f"= {e.real_rows} are not 0; first row {bad[0]} holds SWA slot "
                           f"{s.locs[bad[0]]} (T1: padding rows write the dummy slot)",
                           "stale")
            if problem:
                break
        if problem is None and e.probe_locs is not None:
            pl, pc = info.get("probe_locs"), info.get("probe_count")
            if pl != e.probe_locs:
                n = len(pl) if pl is not None else None
                problem = (f"after leaving the tail a store resolves {n} locations "
                           f"{(pl or [])[:6]}..., expected the forward's own {len(e.probe_locs)}"
                           f" {e.probe_locs[:6]}... (T4: forward_metadata restored at exit)",
                           "metadata")
            elif pc != e.probe_count:
                problem = (f"after leaving the tail the batch's non-padded count is {pc}, "
                           f"expected the forward's {e.probe_count} rows (T4: saved counts "
                           "restored)", "count")
        if failed(fails, "tail_graph", where, problem, e.step, e.fwd):
            break
    return fails
