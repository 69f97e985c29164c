"""Scenario kinds ``dspark_verify``, ``dspark_verify_graph`` and ``window_dp_extend``: target
verify (eager and through the verify graph) and DP-padded EXTENDs on the request-window pools of
:mod:`features.request_window.kinds` (no tail; ``SEMANTICS.md`` beside this file, reference
:mod:`features.request_window.dspark.oracle`). ``dspark_verify``: ``num_draft_tokens`` 1..4,
the ring raised to ``window + num_draft_tokens`` (sglang's sizing); eager verifies of 1..3
requests with and without ``accept`` among admits, extends, decodes, finishes, evictions. ``dspark_verify_graph``: buckets from
:data:`BUCKET_SETS`; graph verifies of a batch equal to a bucket, and eager ones.
``window_dp_extend``: ``extend`` with ``rank_tokens`` (some replaying an even-length request)
and ``dp_decode`` with ``dp_extend``; other ranks' counts 0..3W+6, so some layouts overflow a
small workspace (a refusal, A7). Shrinks towards page size 1, the smallest window, one layer,
one slot, one request, one short step."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from swafuzz.features.request_window.kinds import (
    WindowPlanner,
    admit,
    decode,
    evict,
    extend,
    finish,
    window_kind,
)
from swafuzz.scenarios.case import GraphConfig, Step
from swafuzz.scenarios.episode import action, has_live
from swafuzz.scenarios.planner import Planner, pages_for


class VerifyPlanner(WindowPlanner):
    """:class:`features.request_window.kinds.WindowPlanner` with the verify's page bookkeeping:
    after an ``accept`` a request's length is ``L + a``; the pages past the one holding its
    last accepted token go back to both free counts."""

    def verify(self, rids: list[int], accept: list[int] | None) -> bool:
        T = self.graph.num_draft_tokens
        if not self.can_extend(rids, T):
            return False
        self._extend(rids, T)
        if accept:
            p = self.pool.page_size
            for r, a in zip(rids, accept):
                n = self.reqs[r][0]
                freed = pages_for(n, p) - pages_for(n - T + a, p)
                self.free_full += freed
                self.free_swa += freed
                self.reqs[r][0] = n - T + a
        self.steps.append(Step(op="verify", rids=tuple(rids), exec="eager",
                               accept=tuple(accept or ())))
        return True


@action(has_live)
def verify(draw, pl: VerifyPlanner) -> None:
    """An eager verify of 1..3 live requests, with ``accept`` half of the time."""
    live = pl.live()
    k = draw(st.integers(1, min(3, len(live))))
    rids = list(draw(st.permutations(live))[:k])
    T = pl.graph.num_draft_tokens
    accept = None
    if draw(st.booleans()):
        accept = [draw(st.integers(1, T)) for _ in rids]
    pl.verify(rids, accept)


def _bucket_fits(pl: Planner) -> bool:
    return pl.graph.buckets[0] <= len(pl.live())


@action(_bucket_fits)
def verify_graph(draw, pl: VerifyPlanner) -> None:
    """A verify through the TARGET_VERIFY graph: a batch equal to a bucket (the modelled case),
    ``T <= cap`` and the bucket's layout inside the workspace; else an eager verify."""
    live = pl.live()
    pc, T = pl.pool, pl.graph.num_draft_tokens
    B = draw(st.sampled_from([b for b in pl.graph.buckets if b <= len(live)]))
    rids = list(draw(st.permutations(live))[:B])
    P, W = pc.page_size, pc.window
    ws = -(-((pc.window_slots + 1) * W + pc.window_chunk) // P) * P
    ok = B * W + B * T <= ws
    accept = [draw(st.integers(1, T)) for _ in rids] if draw(st.booleans()) else None
    if pl.verify(rids, accept) and ok:
        last = pl.steps.pop()
        pl.steps.append(Step(op="verify", rids=last.rids, accept=last.accept, exec="graph"))


def _others(draw, pl: Planner) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(0, 3 * pl.pool.window + 6), min_size=1,
                               max_size=3)))


@action(has_live)
def padded_extend(draw, pl: WindowPlanner) -> None:
    """An extend (with encoder replay of some requests) padded by the other DP ranks."""
    live = pl.live()
    k = draw(st.integers(1, min(3, len(live))))
    rids = list(draw(st.permutations(live))[:k])
    lengths = [draw(st.integers(1, 2 * pl.pool.window + 2)) for _ in rids]
    w = pl.pool.window
    rep = [r for r in rids if pl.reqs[r][0] >= 2 and pl.reqs[r][0] % 2 == 0
           and pl.reqs[r][0] - min(pl.reqs[r][0], w) >= pl.reqs[r][1] and draw(st.booleans())]
    if pl.extend_w(rids, lengths, rep):
        last = pl.steps.pop()
        pl.steps.append(Step(op="extend", rids=last.rids, lengths=last.lengths,
                             replay=last.replay, rank_tokens=_others(draw, pl)))


@action(has_live)
def padded_decode(draw, pl: WindowPlanner) -> None:
    """A decode rank rewritten to EXTEND because another rank extends (padded)."""
    live = pl.live()
    k = draw(st.integers(1, min(3, len(live))))
    rids = list(draw(st.permutations(live))[:k])
    pl.forward_extend("dp_decode", rids, 1, "eager", rank_tokens=_others(draw, pl),
                      dp_extend=True)


BUCKET_SETS = ((1,), (1, 2), (1, 2, 3), (2, 3), (1, 3))


def _verify_graph_config(graphs: bool):
    """``num_draft_tokens`` 1..4, the ring raised to window + draft tokens (sglang's sizing,
    :mod:`features.dspark.oracle`); ``graphs``: captured buckets."""
    def graph(draw, pool):
        g = GraphConfig(num_draft_tokens=draw(st.integers(1, 4)))
        pool = replace(pool, request_window=max(pool.request_window,
                                                pool.window + g.num_draft_tokens))
        if graphs:
            g = GraphConfig(buckets=draw(st.sampled_from(BUCKET_SETS)),
                            num_draft_tokens=g.num_draft_tokens)
        return pool, g

    return graph


def _verify_kind(kind: str, actions, graphs: bool):
    return window_kind(kind, True, False, actions, graph=_verify_graph_config(graphs),
                       planner_type=VerifyPlanner)


def dspark_verify_cases():
    """Eager target verify on a request-window pool (module docstring)."""
    return _verify_kind("dspark_verify", [verify, verify, extend, decode, admit, finish, evict],
                        False)


def dspark_verify_graph_cases():
    """Target verify through the DSpark TARGET_VERIFY graph (early metadata) on a
    request-window pool, with eager verifies between (module docstring)."""
    return _verify_kind("dspark_verify_graph", [verify_graph, verify_graph, verify, decode,
                                                admit, admit, finish, evict], True)


def window_dp_extend_cases():
    """DP-padded EXTENDs on a request-window pool (module docstring)."""
    return window_kind("window_dp_extend", True, False,
                       [padded_extend, padded_extend, padded_decode, extend, decode, admit,
                        finish, evict], planner_type=VerifyPlanner)
