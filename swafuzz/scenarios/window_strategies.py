"""Scenario kinds of the V4.1 write path (issue 12): ``request_window``, ``late_tail``,
``encoder_replay``. Registered at the end of :data:`scenarios.strategies.SCENARIO_KINDS`.

Every strategy builds only valid Cases (the window oracle, :mod:`oracles.window`, is the
reference): request slots are tracked (a request takes a slot at ``admit``, frees it at
``finish``), encoder replay is asked only for requests of even length >= 2 whose replayed tokens
are still SWA-mapped, and pages are counted by :class:`scenarios.planner.Planner`. Draw order
shrinks towards page size 1, the smallest window, one layer (two for the tail), one slot, one
request, one short step.

* ``request_window``: a request-window pool (no tail): admits, multi-request extends, eager
  decodes, eager IDLE forwards and idle DP ranks (with and without MTP: ``topk`` 0 or 1, so an
  IDLE may skip its metadata init), finishes that recycle slots, evictions; a small
  ``window_chunk`` makes some layouts overflow the workspace (a refusal, A7).
* ``late_tail``: a late-layer tail on a paged pool or on a request-window pool: EXTENDs with
  requests longer and shorter than the window, decodes between them (no IDLE, no replay).
* ``encoder_replay``: a request-window pool where extends replay the last ``min(Pq, W)`` cached
  tokens of some requests (0.5.23 fold: prepended rows, floor, window reset); no IDLE, no tail.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.planner import Planner

PAGES = (1, 2, 4)


@st.composite
def _pool(draw, window: bool, tail: bool) -> PoolConfig:
    p = draw(st.sampled_from(PAGES))
    w = draw(st.integers(1, 6))
    layers = draw(st.integers(2, 3)) if tail else draw(st.integers(1, 2))
    kw = {}
    if window:
        kw = {"request_window": draw(st.integers(w, 2 * w + 2)),
              "window_slots": draw(st.integers(1, 3)),
              "window_chunk": draw(st.integers(0, 3 * w + 8))}
    if tail:
        kw["late_layer_start"] = draw(st.integers(1, layers - 1))
    return PoolConfig(page_size=p, full_pages=draw(st.integers(24, 48)) // p + 4,
                      swa_pages=draw(st.integers(24, 48)) // p + 4, window=w, layers=layers,
                      draft_layers=1, row_width=draw(st.sampled_from((1, 3, 4))),
                      row_dtype=draw(st.sampled_from(("uint8", "bfloat16"))), **kw)


class _Plan(Planner):
    """Planner + request slots."""

    def setup(self) -> None:
        self.free_slots = self.pool.window_slots if self.pool.request_window else 1 << 30

    def admit_w(self, length: int) -> int | None:
        if self.free_slots < 1:
            return None
        rid = self.admit(length)
        if rid is not None:
            self.free_slots -= 1
        return rid

    def finish_w(self, rid: int) -> None:
        self.finish(rid)
        self.free_slots += 1

    def extend_w(self, rids: list[int], lengths: list[int], replay: list[int]) -> bool:
        p = self.pool.page_size
        cost = sum(-(-(self.reqs[r][0] + n) // p) - -(-self.reqs[r][0] // p)
                   for r, n in zip(rids, lengths))
        if cost > self.free_full or cost > self.free_swa:
            return False
        self.free_full -= cost
        self.free_swa -= cost
        for r, n in zip(rids, lengths):
            self.reqs[r][0] += n
        self.steps.append(Step(op="extend", rids=tuple(rids), lengths=tuple(lengths),
                               replay=tuple(replay)))
        return True


def _admit(draw, pl: _Plan, even: bool = False) -> None:
    n = draw(st.integers(1, 3 * pl.pool.window + 2))
    if even:
        n += n % 2
    pl.admit_w(n)


def _extend(draw, pl: _Plan, replay: bool = False) -> None:
    live = pl.live()
    if not live:
        return
    k = draw(st.integers(1, min(3, len(live))))
    rids = draw(st.permutations(live))[:k]
    lengths = [draw(st.integers(1, 2 * pl.pool.window + 2)) for _ in rids]
    rep = []
    if replay:
        w = pl.pool.window
        for r in rids:
            n, ev = pl.reqs[r]
            if n >= 2 and n % 2 == 0 and n - min(n, w) >= ev and draw(st.booleans()):
                rep.append(r)
    pl.extend_w(list(rids), lengths, rep)


def _decode(draw, pl: _Plan) -> None:
    live = pl.live()
    if live:
        k = draw(st.integers(1, min(4, len(live))))
        pl.forward_extend("decode", list(draw(st.permutations(live))[:k]), 1, "eager")


def _idle(draw, pl: _Plan) -> None:
    if draw(st.booleans()):
        pl.steps.append(Step(op="idle", tokens=draw(st.integers(1, 6)), exec="eager"))
    else:
        others = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
        if max(others) == 0:
            others[0] = 1
        pl.steps.append(Step(op="dp_decode", rids=(), rank_tokens=tuple(others), exec="eager"))


def _finish(draw, pl: _Plan) -> None:
    live = pl.live()
    if live:
        pl.finish_w(draw(st.sampled_from(live)))


def _evict(draw, pl: _Plan) -> None:
    live = pl.live()
    if live:
        pl.evict(draw(st.sampled_from(live)))


def _kind(kind: str, window, tail: bool, actions, even: bool = False, mtp: bool = False):
    @st.composite
    def strategy(draw) -> Case:
        # window None: a paged pool two times in three (shrinks towards paged)
        on = draw(st.integers(0, 2)) == 2 if window is None else window
        pool = draw(_pool(on, tail))
        graph = GraphConfig(topk=draw(st.integers(0, 1)) if mtp else 0)
        pl = _Plan(pool, graph)
        pl.setup()
        _admit(draw, pl, even)
        for _ in range(draw(st.integers(1, 8))):
            if not pl.live():
                _admit(draw, pl, even)
                if not pl.live():
                    break
            draw(st.sampled_from(actions))(draw, pl)
        seed = draw(st.integers(0, 2**32 - 1))
        return Case(pool=pl.pool, graph=pl.graph, steps=tuple(pl.steps), payload_seed=seed,
                    kind=kind)

    return strategy


def request_window_cases():
    """Request-window pool, no tail (module docstring). Shrinks towards one admit and one step."""
    return _kind("request_window", True, False,
                 [_extend, _decode, _idle, _admit, _finish, _evict], mtp=True)()


def late_tail_cases():
    """Late-layer tail on a paged or a request-window pool (module docstring)."""
    return _kind("late_tail", None, True, [_extend, _extend, _decode, _admit, _finish, _evict])()


def encoder_replay_cases():
    """Encoder SWA bounded replay folded into extends on a request-window pool."""

    def ext(draw, pl):
        return _extend(draw, pl, replay=True)

    def adm(draw, pl):
        return _admit(draw, pl, even=True)

    return _kind("encoder_replay", True, False, [ext, ext, _decode, adm, _finish], even=True)()


WINDOW_KINDS = {
    "request_window": request_window_cases,
    "late_tail": late_tail_cases,
    "encoder_replay": encoder_replay_cases,
}
