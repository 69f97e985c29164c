"""The one episode driver every scenario kind draws its Cases with: a Hypothesis-drawn sequence of
planner actions (like stateful ``@rule`` / ``@precondition``) inside one ``@st.composite``, so a
kind stays a plain ``SearchStrategy[Case]``.

* :class:`Action`: a name, a precondition over the planner state (``None``: always) and
  ``apply(draw, planner)`` planning zero or more steps.
* :class:`EpisodeKind`: planner draw (pool, graph), first actions, actions, max steps, the refill
  run when nothing is live, an optional finishing touch; :meth:`EpisodeKind.strategy`.
* :func:`run_episode`: draws the step count (1..max, shrinking to 1); per step runs the refill
  when nothing is live, stops when still nothing is or no action applies, else draws an
  applicable action (duplicates weight it; shrinking moves to the first).

Draw order: planner, first actions, episode, payload seed, finishing touch. Shrinks towards the
smallest pool and graph, the first actions alone, one step of the first action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from swafuzz.scenarios.case import Case
from swafuzz.scenarios.planner import Planner

Draw = Callable[[st.SearchStrategy[Any]], Any]
Apply = Callable[[Draw, Planner], Any]
Precondition = Callable[[Planner], bool]

SEED_MAX = 2**32 - 1


@dataclass(frozen=True)
class Action:
    """One planner action: ``apply(draw, planner)`` plans its steps (it may plan none when a
    drawn detail does not fit); it is only drawn while ``pre(planner)`` holds."""

    name: str
    apply: Apply
    pre: Precondition | None = None

    def applies(self, pl: Planner) -> bool:
        return self.pre is None or bool(self.pre(pl))

    def __call__(self, draw: Draw, pl: Planner) -> None:
        self.apply(draw, pl)


def action(pre: Precondition | None = None, name: str | None = None):
    """Decorator: turn ``def f(draw, pl)`` into an :class:`Action` named ``f`` (or ``name``)
    with precondition ``pre``."""
    def wrap(fn: Apply) -> Action:
        return Action(name or fn.__name__, fn, pre)

    return wrap


def variant(base: Action, name: str, **kw) -> Action:
    """``base`` applied with keyword arguments ``kw`` (same precondition), named ``name``."""
    return Action(name, lambda draw, pl: base.apply(draw, pl, **kw), base.pre)


def has_live(pl: Planner) -> bool:
    """Precondition: at least one live request."""
    return bool(pl.live())


def run_episode(draw: Draw, pl: Planner, actions: tuple[Action, ...], max_steps: int,
                refill: Action | None = None) -> None:
    """Draw 1..``max_steps`` steps of ``actions`` on ``pl`` (module docstring)."""
    for _ in range(draw(st.integers(1, max_steps))):
        if refill is not None and not pl.live():
            refill(draw, pl)
        if not pl.live():
            break
        ok = [a for a in actions if a.applies(pl)]
        if not ok:
            break
        draw(st.sampled_from(ok))(draw, pl)


@dataclass(frozen=True)
class EpisodeKind:
    """A scenario kind drawn by :func:`run_episode`: ``planner(draw)`` (fresh planner on drawn configs),
    ``first`` (actions run once, in order, each when it applies, so short Cases carry the trigger),
    ``actions`` / ``max_steps`` / ``refill``, ``finish(draw, case)`` (optional, drawn after the
    payload seed)."""

    kind: str
    planner: Callable[[Draw], Planner]
    first: tuple[Action, ...]
    actions: tuple[Action, ...]
    max_steps: int
    refill: Action | None = None
    finish: Callable[[Draw, Case], Case] | None = None

    def draw_case(self, draw: Draw) -> Case:
        pl = self.planner(draw)
        for a in self.first:
            if a.applies(pl):
                a(draw, pl)
        run_episode(draw, pl, self.actions, self.max_steps, self.refill)
        case = Case(pool=pl.pool, graph=pl.graph, steps=tuple(pl.steps),
                    payload_seed=draw(st.integers(0, SEED_MAX)), kind=self.kind)
        return self.finish(draw, case) if self.finish is not None else case

    def strategy(self) -> st.SearchStrategy[Case]:
        return st.composite(lambda draw: self.draw_case(draw))()
