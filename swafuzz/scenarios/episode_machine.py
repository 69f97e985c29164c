"""Stateful episodes: a hypothesis ``RuleBasedStateMachine`` moving between every forward kind on
one engine (same captured graphs), with allocator churn and window eviction.

Each rule plans one valid step (:class:`scenarios.planner.Planner`) for
:meth:`EpisodeMachine.run_step`, which a subclass implements
(``tests/harness/test_episode_machine.py`` runs it on live engines). Shrinks towards the shortest
breaking sequence.
"""

from __future__ import annotations

import inspect

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from swafuzz import features
from swafuzz.scenarios.actions import graph_configs, pool_configs
from swafuzz.scenarios.case import GraphConfig, PoolConfig, Step
from swafuzz.scenarios.planner import Planner
from swafuzz.scenarios.sharing import SharingPlanner


class EpisodeMachine(RuleBasedStateMachine):
    """Subclasses implement :meth:`start` (pool/graph config chosen) and :meth:`run_step`."""

    pl: Planner | None = None

    # -- hooks --------------------------------------------------------------------------------
    def start(self, pool: PoolConfig, graph: GraphConfig, seed: int) -> None:
        raise NotImplementedError

    def run_step(self, step: Step) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Called after every step (an invariant); raise AssertionError on a failure."""

    # -- plumbing -----------------------------------------------------------------------------
    def emit(self) -> None:
        while self._sent < len(self.pl.steps):
            self.run_step(self.pl.steps[self._sent])
            self._sent += 1

    @initialize(pool=pool_configs(), graph=graph_configs(spec=True, multi_step=True),
                seed=st.integers(0, 2**32 - 1), length=st.integers(1, 8))
    def setup(self, pool, graph, seed, length):
        self.pl = SharingPlanner(pool, graph)  # Planner + page holders (prefix sharing)
        self._sent = 0
        self.start(pool, graph, seed)
        self.pl.admit(length)
        self.emit()

    def draw_rids(self, data, lo: int = 1) -> list[int]:
        live = self.pl.live()
        if len(live) < lo:
            return []
        k = data.draw(st.integers(lo, min(len(live), self.pl.max_bs)))
        return data.draw(st.permutations(live))[:k]

    def draw_exec(self, data) -> str:
        return data.draw(st.sampled_from(("graph", "eager")))

    # -- rules ----------------------------------------------------------------------------------
    @rule(length=st.integers(1, 20))
    def admit(self, length):
        self.pl.admit(min(length, 2 * self.pl.pool.page_size + 1))
        self.emit()

    @rule(data=st.data())
    def decode(self, data):
        rids = self.draw_rids(data)
        if rids:
            self.pl.forward_extend("decode", rids, 1, self.draw_exec(data))
            self.emit()

    @rule(data=st.data())
    def verify(self, data):
        rids = self.draw_rids(data)
        if rids:
            self.pl.forward_extend("verify", rids, self.pl.graph.num_draft_tokens,
                                   self.draw_exec(data))
            self.emit()

    @rule(data=st.data())
    def draft_extend(self, data):
        rids = self.draw_rids(data)
        ndt = self.pl.graph.num_draft_tokens
        accept = [data.draw(st.integers(1, min(ndt, self.pl.reqs[r][0]))) for r in rids]
        if rids and all(self.pl.reqs[r][0] - a >= self.pl.reqs[r][1] for r, a in zip(rids, accept)):
            self.pl.steps.append(Step(op="draft_extend", rids=tuple(rids), accept=tuple(accept),
                                      exec=self.draw_exec(data)))
            self.emit()

    @rule(data=st.data())
    def draft_decode(self, data):
        rids = self.draw_rids(data)
        g = self.pl.graph
        if rids and g.topk >= 1 and g.num_steps >= 2:
            self.pl.forward_extend("draft_decode", rids, g.topk * g.num_steps, self.draw_exec(data))
            self.emit()

    @rule(data=st.data())
    def idle(self, data):
        self.pl.steps.append(Step(op="idle", tokens=data.draw(st.integers(1, self.pl.max_bs)),
                                  exec=self.draw_exec(data)))
        self.emit()

    @rule(data=st.data())
    def evict(self, data):
        if self.pl.live():
            self.pl.evict(data.draw(st.sampled_from(self.pl.live())))
            self.emit()

    @rule(data=st.data())
    def finish(self, data):
        if len(self.pl.live()) > 1:
            self.pl.finish(data.draw(st.sampled_from(self.pl.live())))
            self.emit()

    @rule(data=st.data())
    def prefix_admit(self, data):
        """A radix-cache prefix hit on a live request (page-aligned shared leading slots)."""
        srcs = [r for r in self.pl.live() if self.pl.prefix_choices(r)]
        if srcs:
            src = data.draw(st.sampled_from(srcs))
            n = data.draw(st.sampled_from(self.pl.prefix_choices(src)))
            extra = data.draw(st.integers(1, 2 * self.pl.pool.page_size + 1))
            if self.pl.admit_prefix(src, n, n + extra) is not None:
                self.emit()

    @invariant()
    def checked(self):
        if self.pl is not None:
            self.check()


def _add_feature_rules(cls: type) -> None:
    """The rules the features add (hook ``scenario.episode_rules``): a function of the machine
    and, when it takes one, a ``data`` draw (``rule(data=st.data())``; else ``rule()``)."""
    for rules in features.hooks("scenario.episode_rules"):
        for name, fn in rules.items():
            if hasattr(cls, name):
                raise features.RecordError(f"episode rule {name!r} is defined twice")
            takes_data = "data" in inspect.signature(fn).parameters
            method = _named(fn, name, cls)
            setattr(cls, name, rule(data=st.data())(method) if takes_data else rule()(method))


def _named(fn, name: str, cls: type):
    """``fn`` as method ``name`` of ``cls`` (Hypothesis prints a failing run's rules by name)."""
    def method(self, **kw):
        return fn(self, **kw)
    method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
    method.__doc__ = fn.__doc__
    return method


_add_feature_rules(EpisodeMachine)
