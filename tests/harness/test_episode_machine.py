"""Stateful episodes on live engines: every forward kind on the same captured graphs.

What: ``scenarios.episode_machine.EpisodeMachine`` drives one eager engine and one graph engine
(tape on CPU) step by step; after every step all checks run against the oracle for the episode
so far. Verified by: an empty failure list after each step on ``unified``; and the same machine
must fail on a mutant (it is not a check that cannot fail). Reproduce: failures print the
hypothesis rule sequence; ``HYPOTHESIS_PROFILE=dev`` explores more. Extend: add a rule to the
machine in ``scenarios/episode_machine.py``.
"""

import pytest
from hypothesis import Phase, settings

from swafuzz.harness.pipeline.session import Session
from swafuzz.scenarios.episode_machine import EpisodeMachine


def make_machine(target: str, impl: str = "torch"):
    class Machine(EpisodeMachine):
        def start(self, pool, graph, seed):
            self.session = Session(pool, graph, seed, target=target, impl=impl)
            self.fails = []

        def run_step(self, step):
            self.fails = self.session.apply(step)

        def check(self):
            assert not self.fails, "\n".join(f"{f.check}: {f.message}" for f in self.fails[:3])

    return Machine


def test_unified_episodes_are_clean():
    m = make_machine("unified")
    m.TestCase.settings = settings(max_examples=12, stateful_step_count=12, deadline=None)
    m.TestCase().runTest()


def test_unified_episodes_triton_interpreter():
    m = make_machine("unified", impl="triton")
    m.TestCase.settings = settings(max_examples=3, stateful_step_count=8, deadline=None)
    m.TestCase().runTest()


def test_machine_catches_a_mutant():
    m = make_machine("mutant:memo_data_ptr")
    m.TestCase.settings = settings(max_examples=30, stateful_step_count=10, deadline=None,
                                   derandomize=True, phases=[Phase.generate])
    with pytest.raises(AssertionError, match="write_targets|pool_bytes|agreement"):
        m.TestCase().runTest()
