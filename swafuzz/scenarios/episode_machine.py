"""Stateful episodes: a hypothesis ``RuleBasedStateMachine`` that moves between every forward
kind on the same engine (the same captured graphs), with allocator churn and window eviction.

Each rule plans one valid step with :class:`scenarios.planner.Planner` and hands it to
:meth:`EpisodeMachine.run_step`, which a subclass implements (scenarios never run anything; the
harness's ``tests/harness/test_episode_machine.py`` runs the step on live engines and checks
every invariant after it). Shrinking removes rules, so a failure shrinks towards the shortest
sequence of steps that still breaks.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

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
    def _emit(self) -> None:
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
        self._emit()

    def _rids(self, data, lo: int = 1) -> list[int]:
        live = self.pl.live()
        if len(live) < lo:
            return []
        k = data.draw(st.integers(lo, min(len(live), self.pl.max_bs)))
        return data.draw(st.permutations(live))[:k]

    def _exec(self, data) -> str:
        return data.draw(st.sampled_from(("graph", "eager")))

    # -- rules ----------------------------------------------------------------------------------
    @rule(length=st.integers(1, 20))
    def admit(self, length):
        self.pl.admit(min(length, 2 * self.pl.pool.page_size + 1))
        self._emit()

    @rule(data=st.data())
    def decode(self, data):
        rids = self._rids(data)
        if rids:
            self.pl.forward_extend("decode", rids, 1, self._exec(data))
            self._emit()

    @rule(data=st.data())
    def verify(self, data):
        rids = self._rids(data)
        if rids:
            self.pl.forward_extend("verify", rids, self.pl.graph.num_draft_tokens,
                                   self._exec(data))
            self._emit()

    @rule(data=st.data())
    def draft_extend(self, data):
        rids = self._rids(data)
        ndt = self.pl.graph.num_draft_tokens
        accept = [data.draw(st.integers(1, min(ndt, self.pl.reqs[r][0]))) for r in rids]
        if rids and all(self.pl.reqs[r][0] - a >= self.pl.reqs[r][1] for r, a in zip(rids, accept)):
            self.pl.steps.append(Step(op="draft_extend", rids=tuple(rids), accept=tuple(accept),
                                      exec=self._exec(data)))
            self._emit()

    @rule(data=st.data())
    def draft_decode(self, data):
        rids = self._rids(data)
        g = self.pl.graph
        if rids and g.topk >= 1 and g.num_steps >= 2:
            self.pl.forward_extend("draft_decode", rids, g.topk * g.num_steps, self._exec(data))
            self._emit()

    @rule(data=st.data())
    def idle(self, data):
        self.pl.steps.append(Step(op="idle", tokens=data.draw(st.integers(1, self.pl.max_bs)),
                                  exec=self._exec(data)))
        self._emit()

    @rule(data=st.data())
    def dp_decode(self, data):
        rids = self._rids(data, lo=0) if data.draw(st.booleans()) else []
        others = data.draw(st.lists(st.integers(0, self.pl.max_bs), min_size=1, max_size=7))
        if not rids and max(others) == 0:
            others[0] = 1
        if self.pl.forward_extend("dp_decode", rids, 1, self._exec(data),
                                  rank_tokens=tuple(others)):
            self._emit()

    @rule(data=st.data())
    def evict(self, data):
        if self.pl.live():
            self.pl.evict(data.draw(st.sampled_from(self.pl.live())))
            self._emit()

    @rule(data=st.data())
    def finish(self, data):
        if len(self.pl.live()) > 1:
            self.pl.finish(data.draw(st.sampled_from(self.pl.live())))
            self._emit()

    @rule(data=st.data())
    def verify_reject(self, data):
        """A verify accepting 1..num_draft_tokens per request: the rejected tail is freed."""
        rids = self._rids(data)
        if rids:
            ndt = self.pl.graph.num_draft_tokens
            accept = tuple(data.draw(st.integers(1, ndt)) for _ in rids)
            if self.pl.verify_reject(rids, accept, self._exec(data)):
                self._emit()

    @rule(data=st.data())
    def prefix_admit(self, data):
        """A radix-cache prefix hit on a live request (page-aligned shared leading slots)."""
        srcs = [r for r in self.pl.live() if self.pl.prefix_choices(r)]
        if srcs:
            src = data.draw(st.sampled_from(srcs))
            n = data.draw(st.sampled_from(self.pl.prefix_choices(src)))
            extra = data.draw(st.integers(1, 2 * self.pl.pool.page_size + 1))
            if self.pl.admit_prefix(src, n, n + extra) is not None:
                self._emit()

    @rule()
    def remap(self):
        if self.pl is not None:
            self.pl.steps.append(Step(op="remap"))
            self._emit()

    @invariant()
    def checked(self):
        if self.pl is not None:
            self.check()
