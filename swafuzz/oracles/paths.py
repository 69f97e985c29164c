"""Execution-path oracle: how every forward of a Case must run, decided from the Case alone.

Plain Python over ints (no torch, ``targets/`` or allocator): a forward's path depends only on the
step's op, request count, ``accept`` / ``tokens`` / ``rank_tokens``, ``exec`` and the
:class:`scenarios.case.GraphConfig`, never on slot ids (kept apart from :mod:`oracles.allocator`,
whose pages may become observed; the path never does). Per forward (:class:`PathExp`):

* ``exec``: ``"graph"`` iff the executor captures graphs and the step says so (a valid Case's
  graph step always fits a bucket; spec §5.1 ``can_run``);
* ``bucket``: smallest captured batch size >= the batch (computed here, not by
  ``GraphConfig.bucket_for``), None eagerly;
* ``rows``: rows each layer's store receives (bucket rows under a graph; real rows eagerly, the
  padded count for a batch a feature pads, dummy rows for IDLE); ``n_real``: rows with a real
  token (the rest pad at full location 0); ``pad_to``: hook ``oracle.batch_pad`` (DP's MAX_LEN,
  features/dp/SEMANTICS.md), else None;
* a step a feature rewrites (hook ``oracle.rewrite``) runs eagerly in the mode it names.

:func:`expected_graph_use`: the replays (one per graph step) and captures (one per (runner,
bucket); decode-like ops share the decode runner, spec §5.1) the harness counts.
:func:`expected_requests`: after every step, the live requests' token counts and SWA eviction
frontiers (spec §2.5).
"""

from __future__ import annotations

from dataclasses import dataclass

from swafuzz import features
from swafuzz.oracles.sharing import effective_prefix
from swafuzz.scenarios.case import STEP_OPS, Case, Step

__all__ = ["PathExp", "batch_pad", "bucket_of", "expected_graph_use", "expected_paths",
           "expected_requests", "rewritten"]


def bucket_of(buckets: tuple[int, ...] | list[int], n: int) -> int | None:
    """The smallest captured batch size ``>= n`` (spec §5.1 replay), None when none fits."""
    fits = [b for b in buckets if b >= n]
    return min(fits) if fits else None


@dataclass(frozen=True)
class PathExp:
    step: int
    fwd: int
    op: str
    mode: str  # ForwardMode name as the backend sees it
    exec: str  # "eager" | "graph"
    runner: str | None  # "decode" | "verify" | "draft_extend" | "multistep"; None eagerly
    bucket: int | None
    rows: int  # rows handed to every store of this forward
    n_real: int
    pad_to: int | None

    @property
    def pad_rows(self) -> int:
        return self.rows - self.n_real


def expected_paths(case: Case, graphs: bool) -> list[PathExp]:
    """One :class:`PathExp` per forward, in execution order. ``graphs``: the executor captures
    graphs (tape, cudagraph) rather than running everything eagerly. Assumes a valid Case
    (:func:`oracles.engine.expect` raises for invalid ones)."""
    g = case.graph
    out: list[PathExp] = []
    for i, s in enumerate(case.steps):
        if s.op in _window_path_ops(case):
            continue  # issue 12: the window / tail path's forwards (features.request_window.oracle)
        rewrite = rewritten(s)
        graph = graphs and s.exec == "graph" and s.op != "admit" and not rewrite

        def add(fwd, mode, runner, batch, per, n_real, eager_rows, pad_to=None, op=s.op,
                graph=graph, i=i):
            b = bucket_of(g.buckets, batch) if graph else None
            if graph and b is None:  # invalid Case; the engine oracle reports it
                graph = False
            out.append(PathExp(i, fwd, op, mode, "graph" if graph else "eager",
                               runner if graph else None, b if graph else None,
                               b * per if graph else eager_rows, n_real, pad_to))

        if s.op == "admit":  # a prefix hit computes only the tokens past the prefix
            n = s.length - effective_prefix(case, s)
            add(0, "EXTEND", None, 1, 1, n, n)
        elif s.op == "decode":
            n = len(s.rids)
            add(0, "DECODE", "decode", n, 1, n, n)
        elif s.op == "verify":
            n, w = len(s.rids), g.num_draft_tokens
            rows, bs, pad_to = batch_pad(s, n * w, n, w, True)
            add(0, rewrite or "TARGET_VERIFY", "verify", bs, w, n * w, rows, pad_to=pad_to)
        elif s.op == "draft_extend":
            n, w = sum(s.accept), g.num_draft_tokens
            rows, bs, pad_to = batch_pad(s, n, len(s.rids), w, False)
            add(0, rewrite or "DRAFT_EXTEND_V2", "draft_extend", bs, w, n, rows, pad_to=pad_to)
        elif s.op == "draft_decode":
            n, w = len(s.rids) * g.topk, g.topk * g.num_steps
            _, bs, pad_to = batch_pad(s, len(s.rids) * w, len(s.rids), w, True)
            for st in range(g.num_steps - 1):
                add(st, "DECODE", "multistep", bs, g.topk, n, bs * g.topk, pad_to=pad_to)
        elif s.op == "idle":
            add(0, "IDLE", "decode", s.tokens, 1, 0, s.tokens)
        elif s.op == "draft_block":  # issue 12: DSpark draft block on a ring
            w = g.num_draft_tokens - 1
            n = len(s.rids) * w
            add(0, "TARGET_VERIFY", "draft_block", len(s.rids), w, n, n)
        else:  # an op a feature owns (slot ``OraclePart.path_ops``)
            for part in features.parts("oracle"):
                if s.op in part.path_ops:
                    part.path_ops[s.op](case, s, add)
    return out


def _window_path_ops(case: Case) -> tuple[str, ...]:
    """Ops whose forwards the request-window / late-layer-tail path runs (features/request_window/SEMANTICS.md):
    under a window every target forward, with a tail (paged pool) the EXTEND forwards."""
    for ops in features.hooks("oracle.step_path_ops"):  # the first feature that answers
        got = ops(case)
        if got is not None:
            return got
    return ()


def rewritten(s: Step) -> str | None:
    """The ForwardMode name a feature rewrites step ``s``'s batch to (slot ``OraclePart.rewrite``:
    DP's EXTEND when another rank extends); a rewritten batch runs eagerly. None: no rewrite."""
    return features.first("oracle", "rewrite", s)


def batch_pad(s: Step, own: int, reqs: int, width: int, whole: bool
              ) -> tuple[int, int, int | None]:
    """How a feature pads step ``s``'s batch of ``own`` rows, ``reqs`` requests of ``width``
    rows (slot ``OraclePart.batch_pad``: DP's MAX_LEN over the ranks): (eager rows, batch size
    for the bucket, rows padded to); ``(own, reqs, None)`` when nothing pads it. ``whole``: a
    fixed-width batch, padded to whole requests."""
    got = features.first("oracle", "batch_pad", s, own, reqs, width, whole)
    return (own, reqs, None) if got is None else got


def expected_graph_use(paths: list[PathExp]) -> tuple[int, int]:
    """(replays, captures) the graph executor must see: one replay per graph step (a multi-step
    draft step is one graph for all its forwards), one capture per (runner, bucket)."""
    steps = {p.step for p in paths if p.exec == "graph"}
    captured = {(p.runner, p.bucket) for p in paths if p.exec == "graph"}
    return len(steps), len(captured)


def expected_requests(case: Case) -> list[dict[int, tuple[int, int]]]:
    """After every step: ``{rid: (token count, SWA eviction frontier)}`` of the live requests
    (features/dense/SEMANTICS.md: extend counts per op, ``evict`` floors ``len - window`` to a page
    multiple and never moves back, ``finish`` removes the request; a prefix admit starts at
    its prefix request's frontier; a verify with ``accept`` keeps the accepted tokens only)."""
    g, P, window = case.graph, case.pool.page_size, case.pool.window
    live: dict[int, list[int]] = {}
    out = []
    for s in case.steps:
        if s.op == "admit":  # a prefix hit starts at the prefix request's frontier
            h = effective_prefix(case, s)
            src = live.get(s.prefix_rid) if h else None
            live[s.rid] = [s.length, min(src[1], h) if src else 0]
        elif s.op == "decode" or s.op in STEP_OPS and STEP_OPS[s.op].grows:
            for r in s.rids:
                live[r][0] += STEP_OPS[s.op].grows if s.op in STEP_OPS else 1
        elif s.op == "verify":  # with accept: the rejected draft tokens leave the request
            for j, r in enumerate(s.rids):
                live[r][0] += s.accept[j] if s.accept else g.num_draft_tokens
        elif s.op == "draft_decode":
            for r in s.rids:
                live[r][0] += g.topk * g.num_steps
        elif s.op == "extend":  # issue 12: encoder replay rows are cached tokens, not new ones
            for r, n in zip(s.rids, s.lengths):
                live[r][0] += n
        elif s.op == "evict":
            n, old = live[s.rid]
            live[s.rid][1] = max(old, n - window) // P * P
        elif s.op == "finish":
            live.pop(s.rid, None)
        out.append({r: (v[0], v[1]) for r, v in live.items()})
    return out
