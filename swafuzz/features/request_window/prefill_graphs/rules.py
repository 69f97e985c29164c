"""Rules of prefill graphs under a request window (issue 12; the "Prefill graphs under a request
window" section of ``features/request_window/prefill_graphs/SEMANTICS.md``): ``exec: "graph"`` on ``admit`` /
``extend``. :func:`validate` raises :class:`scenarios.schema.CaseError` naming the dotted field and
what is allowed (the type and order of ``graph.prefill_buckets`` are common rules,
:mod:`scenarios.validate`)."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError

#: the ops that may carry ``exec: "graph"`` through a prefill graph
PREFILL_OPS = ("admit", "extend")


def validate(case) -> None:
    """What a Case with ``exec: "graph"`` on ``admit`` / ``extend`` needs: a request window,
    no late-layer tail, no prefix hit on that admit."""
    for i, s in enumerate(case.steps):
        if s.op not in PREFILL_OPS or s.exec == "eager":
            continue
        path = f"steps[{i}].exec"
        if not case.pool.request_window:
            raise CaseError(path, f"\"graph\" on {s.op} needs pool.request_window > 0 (the "
                            "breakable prefill graph under a request window); allowed without "
                            "a window: eager")
        if case.pool.late_layer_start:
            raise CaseError(path, f"\"graph\" on {s.op} is not modelled with a late-layer tail "
                            "(pool.late_layer_start > 0); allowed: eager")
        if case.pool.separate_replay:
            raise CaseError(path, f"\"graph\" on {s.op} is not modelled with the separate "
                            "encoder-replay forward (pool.separate_replay = 1); allowed: eager")
        if s.prefix_rid is not None:
            raise CaseError(path, "\"graph\" on an admit with prefix_rid is not modelled; "
                            "allowed: eager")
