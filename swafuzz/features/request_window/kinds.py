"""Scenario kind ``request_window``, and the request-window pool, planner, actions and
:func:`window_kind` the other V4.1 kinds build on. Strategies build valid Cases only (reference:
the window oracle): slots taken at ``admit`` and freed at ``finish``, encoder replay only for
requests of even length >= 2 whose replayed tokens are still SWA-mapped, pages counted by
:class:`scenarios.planner.Planner`. ``request_window``: a window pool (no tail): admits,
multi-request extends, eager decodes, eager IDLE forwards and idle DP ranks (``topk`` 0 or 1:
an IDLE with MTP may skip its metadata init), finishes recycling slots, evictions; a small
``window_chunk`` makes some layouts overflow the workspace (a refusal, A7). Shrinks towards page
size 1, the smallest window, one layer (two for the tail), one slot, one request, one short step."""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios.actions import evict
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.episode import Action, EpisodeKind, action, has_live, variant
from swafuzz.scenarios.planner import Planner

PAGES = (1, 2, 4)


@st.composite
def window_pool(draw, window: bool, tail: bool) -> PoolConfig:
    """A small pool; ``window``: with a request window (1..3 slots, a workspace chunk);
    ``tail``: two or three layers with a late-layer tail."""
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


class WindowPlanner(Planner):
    """Planner + request slots (a request takes a slot at ``admit``, frees it at ``finish``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
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
        cost = sum(self.extend_cost([r], n) for r, n in zip(rids, lengths))
        if cost > self.free_full or cost > self.free_swa:
            return False
        self.free_full -= cost
        self.free_swa -= cost
        for r, n in zip(rids, lengths):
            self.reqs[r][0] += n
        self.steps.append(Step(op="extend", rids=tuple(rids), lengths=tuple(lengths),
                               replay=tuple(replay)))
        return True


@action()
def admit(draw, pl: WindowPlanner, even: bool = False) -> None:
    """Admit a request of 1..3W+2 tokens (``even``: rounded up to even) if a slot is free."""
    n = draw(st.integers(1, 3 * pl.pool.window + 2))
    if even:
        n += n % 2
    pl.admit_w(n)


admit_even = variant(admit, "admit_even", even=True)


@action(has_live)
def extend(draw, pl: WindowPlanner, replay: bool = False) -> None:
    """An extend of 1..3 live requests; ``replay``: some of them (even length >= 2, replayed
    tokens still SWA-mapped) replay their last ``min(n, W)`` cached tokens."""
    live = pl.live()
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


extend_replay = variant(extend, "extend_replay", replay=True)


@action(has_live)
def decode(draw, pl: WindowPlanner) -> None:
    """An eager decode of 1..4 live requests."""
    live = pl.live()
    k = draw(st.integers(1, min(4, len(live))))
    pl.forward_extend("decode", list(draw(st.permutations(live))[:k]), 1, "eager")


@action()
def idle(draw, pl: WindowPlanner) -> None:
    """An eager IDLE forward, or an idle DP rank (other ranks' counts pad it)."""
    if draw(st.booleans()):
        pl.steps.append(Step(op="idle", tokens=draw(st.integers(1, 6)), exec="eager"))
    else:
        ranks = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
        if max(ranks) == 0:
            ranks[0] = 1
        pl.steps.append(Step(op="dp_decode", rids=(), rank_tokens=tuple(ranks), exec="eager"))


@action(has_live)
def finish(draw, pl: WindowPlanner) -> None:
    pl.finish_w(draw(st.sampled_from(pl.live())))


#: a paged pool two times in three, a request-window pool else (shrinks towards paged)
PAGED_OR_WINDOW = st.integers(0, 2).map(lambda i: i == 2)


def window_kind(kind: str, window: bool | st.SearchStrategy[bool], tail: bool,
                actions: list[Action], first: Action = admit, mtp: bool = False,
                max_steps: int = 8, graph=None,
                planner_type: type[WindowPlanner] = WindowPlanner) -> st.SearchStrategy[Case]:
    """A request-window kind: the pool (with a request window when ``window``, drawn when it is
    a strategy, e.g. :data:`PAGED_OR_WINDOW`; a late-layer tail when ``tail``), the graph
    (``graph(draw, pool) -> (pool, GraphConfig)``; default: ``topk`` 0 or 1 when ``mtp``), a
    ``planner_type`` on them; ``first`` once and again whenever nothing is live, then the
    episode of ``actions``."""
    def planner(draw) -> WindowPlanner:
        on = draw(window) if isinstance(window, st.SearchStrategy) else window
        pool = draw(window_pool(on, tail))
        if graph is not None:
            pool, g = graph(draw, pool)
        else:
            g = GraphConfig(topk=draw(st.integers(0, 1)) if mtp else 0)
        return planner_type(pool, g)

    return EpisodeKind(kind, planner, (first,), tuple(actions), max_steps,
                       refill=first).strategy()


def request_window_cases():
    """Request-window pool, no tail (module docstring). Shrinks towards one admit and one step."""
    return window_kind("request_window", True, False,
                       [extend, decode, idle, admit, finish, evict], mtp=True)
