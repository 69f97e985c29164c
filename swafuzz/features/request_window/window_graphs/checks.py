"""The ``window_graph`` check (addendum §4, §5 W7): DECODE and prefill graphs under a request
window, the target's window-path channel against the window oracle's (:func:`check_window_graph`)."""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.features.request_window.channel import expected
from swafuzz.features.request_window.lane import fwd_label, window_pairs


@check("window_graph")
def check_window_graph(case, obs, exp) -> list[Failure]:
    """W7 and the buckets' shapes: every DECODE-graph forward under a window (graph executors) ran in
    its bucket ``B`` (the smallest >= the batch) with layout size ``B * W + B``, every prefill
    graph in its token bucket ``T`` with ``min(S + 1, T) * W + T``, and every replay of one graph
    key (decode and prefill keyed apart) used the layout object its capture built (tokens
    compared per key); a graph forward the Case does not determine, or one run eagerly, too.
    Proven by ``window_graph_layout_rebuilt`` and ``prefill_graph_layout_rebound`` (this check
    alone)."""
    if expected(exp) is None:
        return []
    pairs, _ = window_pairs(obs, exp, "window_graph")  # missing / extra forwards: window's
    seen: dict[tuple[bool, int], tuple[int, int]] = {}
    fails = []
    for o, e in pairs:
        ob = getattr(o, "bucket", None)
        if ob != e.bucket:
            fails.append(Failure("window_graph", f"{fwd_label(o)}: ran in bucket {ob}, the Case "
                                 f"determines {e.bucket} (None: eager)", "path", e.step, e.fwd))
            break
        if e.bucket is None:
            continue
        if o.layout_size != e.size:
            fails.append(Failure("window_graph", f"{fwd_label(o)}: layout size {o.layout_size}, "
                                 f"expected {e.size} (bucket {e.bucket}: decode groups = rows, "
                                 f"prefill groups = min(S + 1, T); W7)",
                                 "size", e.step, e.fwd))
            break
        # a prefill graph (EXTEND, features.prefill_graphs.oracle) and a DECODE graph of the same
        # bucket size are different graphs
        first = seen.setdefault((e.mode == "EXTEND", e.bucket), (o.layout_id, e.step))
        if o.layout_id != first[0]:
            fails.append(Failure("window_graph", f"{fwd_label(o)}: bucket {e.bucket} replayed with "
                                 f"another layout object than at step {first[1]} (W7: the "
                                 "persistent layout keeps its identity per graph key)",
                                 "identity", e.step, e.fwd))
            break
    return fails
