"""Pool and graph draws and the planner actions (:class:`scenarios.episode.Action`) of the paged
kinds (dense rows, DSV4 layout, ring, sharing triggers); a feature's own live in its ``kinds.py``.

Actions plan only steps that fit (:class:`scenarios.planner.Planner`). Shrinks towards page size
1 (then 16, 64, 256), the fewest pages, one layer, one request, graph before eager, the smallest
bucket list.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.scenarios.case import GraphConfig, PoolConfig, Step
from swafuzz.scenarios.episode import Action, action, has_live
from swafuzz.scenarios.planner import Planner

PAGE_SIZES = (1, 16, 64, 256)
BUCKET_SETS = ((1, 2, 4, 8), (4,), (2, 4), (1, 8), (1, 2, 3, 4), (1, 2, 4, 6, 8))
EXECS = ("graph", "eager")


@st.composite
def pool_configs(draw, min_pages: int = 2) -> PoolConfig:
    """Pool configs; shrink towards P=1, ``min_pages`` pages each side, window 1, one layer,
    one-byte rows."""
    p = draw(st.sampled_from(PAGE_SIZES))
    return PoolConfig(
        page_size=p,
        full_pages=draw(st.integers(min_pages, 12)),
        swa_pages=draw(st.integers(min_pages, 12)),
        window=draw(st.integers(1, 3 * p + 2)),
        layers=draw(st.integers(1, 2)),
        draft_layers=draw(st.integers(1, 2)),
        row_width=draw(st.sampled_from((1, 3, 8, 5))),
        row_dtype=draw(st.sampled_from(("uint8", "bfloat16"))),
    )


@st.composite
def graph_configs(draw, spec: bool = False, multi_step: bool = False) -> GraphConfig:
    """Buckets (shrinks to ``(1, 2, 4, 8)``) and speculative settings (shrink to the smallest:
    topk 1, 2 steps, 1 draft token)."""
    buckets = draw(st.sampled_from(BUCKET_SETS))
    topk = draw(st.integers(1, 2)) if multi_step else (draw(st.integers(0, 2)) if spec else 0)
    steps = draw(st.integers(2, 3)) if multi_step else 1
    ndt = draw(st.integers(1, 4)) if (spec or multi_step) else 1
    return GraphConfig(buckets=buckets, topk=topk, num_steps=steps, num_draft_tokens=ndt)


def subset(draw, items: list[int], lo: int, hi: int) -> list[int]:
    """``lo..hi`` of ``items`` in a drawn order (shrinks to ``lo`` items in list order)."""
    hi = min(hi, len(items))
    if hi < lo:
        return []
    k = draw(st.integers(lo, hi))
    chosen = draw(st.permutations(items))[:k] if k else []
    return list(chosen)


def exec_mode(draw) -> str:
    """``"graph"`` or ``"eager"`` (shrinks to graph)."""
    return draw(st.sampled_from(EXECS))


# --------------------------------------------------------------------------- actions
@action()
def admit_some(draw, pl: Planner) -> None:
    """Admit 1..max_bs requests (shrinks to one request of length 1)."""
    p = pl.pool.page_size
    n = draw(st.integers(1, max(1, min(pl.max_bs, 6))))
    for _ in range(n):
        length = draw(st.integers(1, 2 * p + 1))
        if pl.admit(length) is None:
            break


@action(has_live)
def decode(draw, pl: Planner) -> None:
    rids = subset(draw, pl.live(), 1, pl.max_bs)
    pl.forward_extend("decode", rids, 1, exec_mode(draw))


@action(has_live)
def decode_shrinking(draw, pl: Planner) -> None:
    """Two graph decodes in one bucket, the second with fewer requests: the padded rows of the
    second must not inherit the first's locations (PR #24743)."""
    live = pl.live()[: pl.max_bs]
    if len(live) < 2:
        return decode(draw, pl)
    if pl.forward_extend("decode", live, 1, "graph"):
        k = draw(st.integers(1, len(live) - 1))
        pl.forward_extend("decode", live[:k], 1, "graph")


@action(has_live)
def verify(draw, pl: Planner) -> None:
    rids = subset(draw, pl.live(), 1, pl.max_bs)
    pl.forward_extend("verify", rids, pl.graph.num_draft_tokens, exec_mode(draw))


def plan_draft_extend(draw, pl: Planner, more=None) -> None:
    """A draft-extend of live requests; ``more(draw, pl, num_draft_tokens)``: the feature
    fields of the step (a dict), drawn after its ``exec`` (e.g. other ranks' token counts)."""
    rids = subset(draw, pl.live(), 1, pl.max_bs)
    ndt = pl.graph.num_draft_tokens
    accept = tuple(draw(st.integers(1, min(ndt, pl.reqs[r][0]))) for r in rids)
    # every accepted token must still be SWA-mapped (inside the eviction frontier)
    if any(pl.reqs[r][0] - a < pl.reqs[r][1] for r, a in zip(rids, accept)):
        return
    ex = exec_mode(draw)
    extra = more(draw, pl, ndt) if more is not None else {}
    pl.steps.append(Step(op="draft_extend", rids=tuple(rids), accept=accept, exec=ex, **extra))


draft_extend = Action("draft_extend", lambda draw, pl: plan_draft_extend(draw, pl), has_live)


@action(has_live)
def draft_decode(draw, pl: Planner) -> None:
    rids = subset(draw, pl.live(), 1, pl.max_bs)
    pl.forward_extend("draft_decode", rids, pl.graph.topk * pl.graph.num_steps, exec_mode(draw))


@action()
def idle(draw, pl: Planner) -> None:
    pl.steps.append(Step(op="idle", tokens=draw(st.integers(1, pl.max_bs)), exec=exec_mode(draw)))


@action(has_live)
def evict(draw, pl: Planner) -> None:
    pl.evict(draw(st.sampled_from(pl.live())))


@action()
def churn(draw, pl: Planner) -> None:
    """Finish a request and admit a new one (allocator churn)."""
    if pl.live():
        pl.finish(draw(st.sampled_from(pl.live())))
    pl.admit(draw(st.integers(1, 2 * pl.pool.page_size + 1)))
