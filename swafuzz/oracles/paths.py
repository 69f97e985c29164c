"""Execution-path oracle: how every forward of a Case must run, decided from the Case alone.

Plain Python over ints (no torch, no ``targets/``, no allocator): the path of a forward depends
only on the step's op, its request count, ``accept`` / ``tokens`` / ``rank_tokens``, the step's
``exec`` and the :class:`scenarios.case.GraphConfig` - never on slot ids. This module is separate
from the allocator shadow in :mod:`oracles.allocator` on purpose (its page prediction may become an
observed input for real allocators; the path never does).

For every forward (:class:`PathExp`):

* ``exec``: ``"graph"`` iff the executor captures graphs and the step says ``exec == "graph"``
  (a graph step always has a fitting bucket in a valid Case; an eager executor runs everything
  eagerly, spec §5.1 ``can_run``);
* ``bucket``: the captured batch size (smallest bucket >= the batch, computed here, not by
  ``GraphConfig.bucket_for`` which the target calls), None on the eager path;
* ``rows``: the rows every layer's store receives (bucket rows under a graph; real rows eagerly,
  except DP: the padded count, spec §5.4 (4), and IDLE: its dummy rows);
* ``n_real``: rows that carry a real token (the rest are padding at full location 0);
* ``dp_padded``: the DP MAX_LEN count the rank pads to (``max(own, *others)``, spec §5.4 (2);
  rounded up to whole requests for verify and multi-step draft), None without DP;
* a step with ``dp_extend`` is rewritten to EXTEND (spec §5.4 (3)): eager, mode ``EXTEND``.

:func:`expected_graph_use` adds what the graph executor itself must have seen, counted by the
harness (not reported by the target): one replay per graph step and one capture per distinct
(runner, bucket) pair (decode, IDLE and DP-decode share the decode runner, spec §5.1, §5.4).

:func:`expected_requests` gives, after every step, the live requests with their token count and
SWA eviction frontier (spec §2.5): arithmetic over the Case's steps, no page choices.
"""

from __future__ import annotations

from dataclasses import dataclass

from swafuzz.oracles.sharing import effective_prefix
from swafuzz.scenarios.case import Case

__all__ = ["PathExp", "bucket_of", "dp_pad", "expected_graph_use", "expected_paths",
           "expected_requests"]


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
    dp_padded: int | None

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
        graph = graphs and s.exec == "graph" and s.op != "admit" and not s.dp_extend

        def add(fwd, mode, runner, batch, per, n_real, eager_rows, dp=None, op=s.op,
                graph=graph, i=i):
            b = bucket_of(g.buckets, batch) if graph else None
            if graph and b is None:  # invalid Case; the engine oracle reports it
                graph = False
            out.append(PathExp(i, fwd, op, mode, "graph" if graph else "eager",
                               runner if graph else None, b if graph else None,
                               b * per if graph else eager_rows, n_real, dp))

        if s.op == "admit":  # a prefix hit computes only the tokens past the prefix
            n = s.length - effective_prefix(case, s)
            add(0, "EXTEND", None, 1, 1, n, n)
        elif s.op == "decode":
            n = len(s.rids)
            add(0, "DECODE", "decode", n, 1, n, n)
        elif s.op == "verify":
            n, w = len(s.rids), g.num_draft_tokens
            rows, bs, dp = dp_pad(s.rank_tokens, n * w, n, w, True)
            add(0, "EXTEND" if s.dp_extend else "TARGET_VERIFY", "verify", bs, w, n * w, rows,
                dp=dp)
        elif s.op == "draft_extend":
            n, w = sum(s.accept), g.num_draft_tokens
            rows, bs, dp = dp_pad(s.rank_tokens, n, len(s.rids), w, False)
            add(0, "EXTEND" if s.dp_extend else "DRAFT_EXTEND_V2", "draft_extend", bs, w, n,
                rows, dp=dp)
        elif s.op == "draft_decode":
            n, w = len(s.rids) * g.topk, g.topk * g.num_steps
            _, bs, dp = dp_pad(s.rank_tokens, len(s.rids) * w, len(s.rids), w, True)
            for st in range(g.num_steps - 1):
                add(st, "DECODE", "multistep", bs, g.topk, n, bs * g.topk, dp=dp)
        elif s.op == "idle":
            add(0, "IDLE", "decode", s.tokens, 1, 0, s.tokens)
        elif s.op == "dp_decode":
            n = len(s.rids)
            padded = max([n, *s.rank_tokens])
            mode = "EXTEND" if s.dp_extend else ("DECODE" if n else "IDLE")
            add(0, mode, "decode", padded, 1, n, padded, dp=padded)
        elif s.op == "draft_block":  # issue 12: DSpark draft block on a ring
            w = g.num_draft_tokens - 1
            n = len(s.rids) * w
            add(0, "TARGET_VERIFY", "draft_block", len(s.rids), w, n, n)
    return out


def _window_path_ops(case: Case) -> tuple[str, ...]:
    """Ops whose forwards the request-window / late-layer-tail path runs (features/request_window/SEMANTICS.md):
    under a window every target forward, with a tail (paged pool) the EXTEND forwards."""
    if case.pool.request_window:  # verify: features.dspark.oracle
        return ("admit", "extend", "decode", "idle", "dp_decode", "verify")
    if case.pool.late_layer_start:
        return ("admit", "extend")
    return ()


def dp_pad(rank_tokens, own: int, reqs: int, width: int, whole: bool
            ) -> tuple[int, int, int | None]:
    """DP MAX_LEN padding of a speculative batch (features/dp/SEMANTICS.md): (eager rows, batch size
    for the bucket, padded count or None without DP). ``whole``: fixed-width batch, padded to
    whole requests of ``width`` rows."""
    if not rank_tokens:
        return own, reqs, None
    padded = max([own, *rank_tokens])
    if whole:
        padded = -(-padded // width) * width
    return padded, max(reqs, -(-padded // width)), padded


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
        elif s.op in ("decode", "dp_decode"):
            for r in s.rids:
                live[r][0] += 1
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
