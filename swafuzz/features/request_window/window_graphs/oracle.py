"""DECODE graphs under a request window, the oracle part: the captures and replays a graph
executor must count for them (hook ``oracle.graph_use``, summed by ``exec_path``), from the Case
alone. Plain Python.
"""

from __future__ import annotations

from swafuzz.oracles.paths import bucket_of


def expected_window_graph_use(case, graphs: bool) -> tuple[int, int]:
    """(replays, captures) of the DECODE graphs under a request window (issue 12,
    ``SEMANTICS.md`` beside this file): one replay per ``decode`` / ``idle`` / ``dp_decode`` step with
    ``exec == "graph"`` whose batch fits a bucket, one capture per bucket (decode and IDLE share
    the window's DECODE graphs); likewise for ``verify`` steps and their TARGET_VERIFY graphs
    (their own buckets); (0, 0) without a window or a graph executor. Assumes a valid
    Case (steps after a refusal are not run: the caller stops at the target's error)."""
    if not (graphs and case.pool.request_window):
        return 0, 0
    replays, buckets = 0, set()
    for s in case.steps:
        if s.exec != "graph":
            continue
        if s.op == "verify":  # the DSpark TARGET_VERIFY graph (features.dspark.oracle): own buckets
            b = bucket_of(case.graph.buckets, len(s.rids))
            if b is not None:
                replays += 1
                buckets.add(("verify", b))
            continue
        n = (len(s.rids) if s.op == "decode" else s.tokens if s.op == "idle"
             else max([len(s.rids), *s.rank_tokens]) if s.op == "dp_decode" else 0)
        b = bucket_of(case.graph.buckets, n) if n else None
        if b is not None:
            replays += 1
            buckets.add(b)
    return replays, len(buckets)
