"""Stateful episodes that switch between V4.0 (paged SWA pool) and V4.1 (request-window pool)
engine instances in one process: a server never changes its pool kind, but a process (CI worker,
test session, offline user) builds and drops engines of both families, which exposes state that
outlives an instance (module caches, class attributes). One live instance at a time, checked
after every step against its own Case's oracle; ``switch`` starts one of the other family with a
fresh pool. Steps: ``admit``, eager ``decode``, eager ``idle`` (1..2 rows, so counts recur),
``finish``, on V4.1 multi-request ``extend``; windows 1..3. Subclasses implement :meth:`start`
and :meth:`run_step` (``tests/harness/test_switch_machine.py``); failures shrink towards the
fewest switches and steps."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from swafuzz.features.request_window.kinds import WindowPlanner
from swafuzz.scenarios.case import GraphConfig, PoolConfig, Step
from swafuzz.scenarios.planner import Planner


def _pool(data, v41: bool) -> PoolConfig:
    p = data.draw(st.sampled_from((1, 2)))
    w = data.draw(st.integers(1, 3))
    kw = {}
    if v41:
        kw = {"request_window": data.draw(st.integers(w, 2 * w + 2)),
              "window_slots": data.draw(st.integers(1, 3)),
              "window_chunk": data.draw(st.integers(2 * w + 8, 4 * w + 12))}
    return PoolConfig(page_size=p, full_pages=40 // p + 4, swa_pages=40 // p + 4, window=w,
                      layers=data.draw(st.integers(1, 2)), draft_layers=1,
                      row_width=data.draw(st.sampled_from((1, 4))), **kw)


class PoolSwitchMachine(RuleBasedStateMachine):
    """Subclasses implement :meth:`start` (a new engine instance) and :meth:`run_step`."""

    def start(self, pool: PoolConfig, graph: GraphConfig, seed: int) -> None:
        raise NotImplementedError

    def run_step(self, step: Step) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Called after every step; raise AssertionError on a failure."""

    # -- plumbing -----------------------------------------------------------------------------
    def _new_instance(self, data, v41: bool) -> None:
        self.v41 = v41
        pool = _pool(data, v41)
        graph = GraphConfig()
        if v41:
            self.pl = WindowPlanner(pool, graph)
        else:
            self.pl = Planner(pool, graph)
        self._sent = 0
        self.instances = getattr(self, "instances", 0) + 1
        self.start(pool, graph, data.draw(st.integers(0, 2**32 - 1)))
        self._admit(data.draw(st.integers(1, 3 * pool.window + 2)))

    def _emit(self) -> None:
        while self._sent < len(self.pl.steps):
            self.run_step(self.pl.steps[self._sent])
            self._sent += 1

    def _admit(self, length: int) -> None:
        if self.v41:
            self.pl.admit_w(length)
        else:
            self.pl.admit(length)
        self._emit()

    @initialize(data=st.data(), v41=st.booleans())
    def setup(self, data, v41):
        self._new_instance(data, v41)

    # -- rules --------------------------------------------------------------------------------
    @rule(data=st.data())
    def switch(self, data):
        """End this engine instance; start one of the other family in the same process."""
        self._new_instance(data, not self.v41)

    @rule(length=st.integers(1, 8))
    def admit(self, length):
        self._admit(length)

    @rule(data=st.data())
    def decode(self, data):
        live = self.pl.live()
        if live:
            k = data.draw(st.integers(1, min(3, len(live))))
            self.pl.forward_extend("decode", list(data.draw(st.permutations(live))[:k]), 1,
                                   "eager")
            self._emit()

    @rule(tokens=st.integers(1, 2))
    def idle(self, tokens):
        self.pl.steps.append(Step(op="idle", tokens=tokens, exec="eager"))
        self._emit()

    @rule(data=st.data())
    def finish(self, data):
        live = self.pl.live()
        if live:
            rid = data.draw(st.sampled_from(live))
            if self.v41:
                self.pl.finish_w(rid)
            else:
                self.pl.finish(rid)
            self._emit()

    @precondition(lambda self: getattr(self, "v41", False))
    @rule(data=st.data())
    def extend(self, data):
        live = self.pl.live()
        if live:
            k = data.draw(st.integers(1, min(2, len(live))))
            rids = list(data.draw(st.permutations(live))[:k])
            lengths = [data.draw(st.integers(1, 2 * self.pl.pool.window + 2)) for _ in rids]
            self.pl.extend_w(rids, lengths, [])
            self._emit()

    @invariant()
    def checked(self):
        if getattr(self, "pl", None) is not None:
            self.check()
