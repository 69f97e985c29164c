"""Scenario kind ``tail_prefix``, and :func:`prefix_kind`, which ``replay_separate``
(:mod:`features.request_window.encoder_replay.kinds`) shares (addendum §2.3, §2.4, §5 T5 / E1 /
E2, §6 A13). ``tail_prefix``: a late-layer tail (two or three layers) on a paged pool (two times
in three) or a request-window pool; admits plain or as whole-page radix prefix hits on a live
request, lengths around ``prefix_len + W`` so the re-prefill cap cuts, removes or keeps the
hit; extends (replaying some requests under a window), decodes. ``replay_separate``: a window
pool with ``separate_replay = 1``, tail or not: replaying extends, prefix admits, decodes.
Valid Cases only: no finish or eviction (shared pages never need sharing-aware freeing), a slot
per admitted request, an even hit under a window, pages counted as the contract allocates them.
Shrinks towards page size 1, the smallest window, two layers, one slot, a paged pool, one
prefix admit."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from swafuzz.features.request_window.kinds import (
    PAGED_OR_WINDOW,
    WindowPlanner,
    admit,
    decode,
    extend,
    window_pool,
)
from swafuzz.scenarios.case import GraphConfig, Step
from swafuzz.scenarios.episode import Action, EpisodeKind, action, has_live


def _can_hit(pl: WindowPlanner) -> bool:
    return pl.free_slots >= 1 and any(pl.reqs[r][0] >= pl.pool.page_size for r in pl.live())


def _hit(n: int, length: int, pool) -> int:
    """The hit the contract keeps (the late-layer cap, ``SEMANTICS.md``), for page counting
    (kinds import no oracle)."""
    if not pool.late_layer_start:
        return n
    limit = length - pool.window if length > pool.window else 0
    return min(n, limit // pool.page_size * pool.page_size)


@action(_can_hit)
def prefix_admit(draw, pl: WindowPlanner) -> None:
    """A radix hit on a live request (module docstring). Skipped when nothing fits."""
    P, W = pl.pool.page_size, pl.pool.window
    src = draw(st.sampled_from([r for r in pl.live() if pl.reqs[r][0] >= P]))
    n = P * draw(st.integers(1, pl.reqs[src][0] // P))
    length = n + draw(st.integers(1, 2 * W + 2))
    h = _hit(n, length, pl.pool)
    if pl.pool.request_window and h % 2:
        return  # an odd replay boundary: the release refuses it
    cost = -(-length // P) - h // P
    if cost > pl.free_full or cost > pl.free_swa:
        return
    pl.free_full -= cost
    pl.free_swa -= cost
    rid = pl.next_rid
    pl.next_rid += 1
    pl.reqs[rid] = [length, 0]
    pl.free_slots -= 1
    pl.steps.append(Step(op="admit", rid=rid, length=length, prefix_rid=src, prefix_len=n))


@action()
def admit_w(draw, pl: WindowPlanner) -> None:
    """An admit, of even length under a window (replay needs an even boundary)."""
    admit.apply(draw, pl, even=bool(pl.pool.request_window))


@action(has_live)
def extend_w(draw, pl: WindowPlanner) -> None:
    """An extend, replaying some requests under a window."""
    extend.apply(draw, pl, replay=bool(pl.pool.request_window))


ACTIONS: tuple[Action, ...] = (prefix_admit, prefix_admit, extend_w, decode, admit_w)


def prefix_kind(kind: str, separate: bool):
    """No refill: an episode ends when nothing is live (no finish, so only a failed first
    admit leaves nothing live)."""
    def planner(draw) -> WindowPlanner:
        if separate:
            on, tail = True, draw(st.booleans())
        else:
            on, tail = draw(PAGED_OR_WINDOW), True
        pool = draw(window_pool(on, tail))
        if separate:
            pool = replace(pool, separate_replay=1)
        return WindowPlanner(pool, GraphConfig())

    return EpisodeKind(kind, planner, (admit_w,), ACTIONS, 7).strategy()


def tail_prefix_cases():
    """Prefix hits under a late-layer tail, paged or windowed (module docstring)."""
    return prefix_kind("tail_prefix", False)
