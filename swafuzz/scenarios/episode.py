"""The one episode driver every scenario kind draws its Cases with.

An episode is a Hypothesis-drawn sequence of planner actions, in the spirit of Hypothesis's
stateful testing (``@rule`` / ``@precondition``) but drawn inside one ``@st.composite`` so that
a kind stays a plain ``SearchStrategy[Case]`` (the campaign, the zoo and the bench draw from it).

* :class:`Action`: a name, a precondition (a function of the planner state; ``None``: always)
  and a draw-and-apply function ``apply(draw, planner)`` that plans zero or more steps.
* :class:`EpisodeKind`: a kind declared as (planner draw: pool and graph configs, first
  actions run once, the action list, max steps, the refill run when nothing is live, an
  optional finishing touch on the Case). :meth:`EpisodeKind.strategy` is its strategy.
* :func:`run_episode`: the loop. It draws the number of steps (1..max, shrinking to 1); before
  each step, when no request is live, it runs the refill (if any); it stops when still nothing
  is live or no action applies; else it draws one of the applicable actions (duplicates in
  the list weight an action; the first entry is what shrinking moves towards) and applies it.

Draw order of every Case: the planner (pool, graph), the first actions, the episode, the
payload seed, then the finishing touch. Shrinking therefore moves towards the smallest pool
and graph, the first actions alone, one step of the first action in the list.
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
    """A scenario kind drawn by :func:`run_episode`.

    ``planner(draw)``: a fresh planner on drawn pool and graph configs; ``first``: actions run
    once, in order, before the episode (the admission, a kind's trigger: so short Cases carry
    it), each only when it applies; ``actions`` / ``max_steps`` / ``refill``: the episode;
    ``finish(draw, case)``: an optional last touch on the Case (a config flag, a drawn
    field), drawn after the payload seed."""

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
