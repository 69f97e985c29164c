"""A live session: one engine per executor that steps are applied to one at a time (the same
captured graphs across the whole episode), checked after every step against the oracle.

Used by stateful episodes (``scenarios.episode_machine``): where a Case run builds a fresh engine,
a Session keeps it, so graphs captured early are replayed by later, different forwards.
"""

from __future__ import annotations

from dataclasses import replace

from swafuzz.checks.base import Failure
from swafuzz.checks.runner import run_checks
from swafuzz.harness.executors import get_executor
from swafuzz.harness.executors.base import CountingExecutor
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import build_engine


class Session:
    def __init__(self, pool: PoolConfig, graph: GraphConfig, seed: int, target: str = "unified",
                 impl: str = "torch", executors: tuple[str, ...] = ("eager", "tape")):
        self.case = Case(pool=pool, graph=graph, steps=(), payload_seed=seed, kind="episode")
        self.executors = [CountingExecutor(get_executor(e)) for e in executors]
        self.engines = [build_engine(target, self.case, impl, ex) for ex in self.executors]
        self.observations = [eng.new_observation() for eng in self.engines]

    def apply(self, step: Step) -> list[Failure]:
        """Apply ``step`` on every engine, then run every check on the whole episode so far."""
        i = len(self.case.steps)
        self.case = replace(self.case, steps=self.case.steps + (step,))
        for eng, obs in zip(self.engines, self.observations):
            eng.case = self.case
            if obs.error is None:
                eng.apply(obs, i, step)
        for ex, obs in zip(self.executors, self.observations):
            obs.executor = ex.name  # measured by the harness, not reported by the target
            obs.graph_use = ex.counts()
        fails, _ = run_checks(self.case, self.observations, expect(self.case))
        return fails
