"""Issue 12, deliverable 2: episodes that switch between V4.0 and V4.1 engine instances in one
process (``features.window_graphs.switch_machine.PoolSwitchMachine``).

What: on ``unified`` (and on sglang 0.5.23 when installed) every instance, V4.0 paged or V4.1
request-window, stays clean after every step whatever ran before it in the process; the
``mutant:switch_idle_loc_process_memo`` mutant (state surviving an engine instance: the IDLE
branch's locations memoised process-wide) is caught by the machine, and per-family episodes
(no switch) never reach it. Reproduce: ``pytest tests/harness/test_switch_machine.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

from swafuzz.features.request_window.window_graphs.switch_machine import PoolSwitchMachine
from swafuzz.harness.pipeline.session import Session


def make_machine(target: str, family: bool | None = None):
    """``family``: None switches freely; True / False pins every instance of the whole run to
    V4.1 / V4.0 (the ``switch`` rule then starts another instance of the same family)."""

    class Machine(PoolSwitchMachine):
        def _new_instance(self, data, v41):
            super()._new_instance(data, v41 if family is None else family)

        def start(self, pool, graph, seed):
            self.session = Session(pool, graph, seed, target=target, impl="torch")
            self.fails = []

        def run_step(self, step):
            self.fails = self.session.apply(step)

        def check(self):
            assert not self.fails, "\n".join(f"{f.check}: {f.message}" for f in self.fails[:3])

    return Machine


def _clear_memo():
    from swafuzz.features.request_window.window_graphs import mutants as m

    m._IDLE_LOC_MEMO.clear()


def test_unified_switch_episodes_are_clean():
    m = make_machine("unified")
    m.TestCase.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)
    m.TestCase().runTest()


def test_switch_machine_catches_a_leak_between_instances():
    _clear_memo()
    m = make_machine("mutant:switch_idle_loc_process_memo")
    m.TestCase.settings = settings(max_examples=60, stateful_step_count=12, deadline=None,
                                   derandomize=True, phases=[Phase.generate])
    with pytest.raises(AssertionError, match="window|write_targets|pool_bytes|contracts"):
        m.TestCase().runTest()
    _clear_memo()


@pytest.mark.parametrize("family", [False, True])
def test_one_family_never_reaches_the_leak(family):
    """The same mutant, every instance of the run V4.0 (or every one V4.1): nothing to find."""
    _clear_memo()
    m = make_machine("mutant:switch_idle_loc_process_memo", family)
    m.TestCase.settings = settings(max_examples=40, stateful_step_count=12, deadline=None,
                                   derandomize=True, phases=[Phase.generate])
    m.TestCase().runTest()
    _clear_memo()


def test_sglang_switch_episodes_are_clean():
    pytest.importorskip("sglang")
    from swafuzz.targets.sglang.real import ADAPTER

    if ADAPTER != "0.5.23":
        pytest.skip("V4.1 pools are driven on the 0.5.23 adapter only")
    m = make_machine("sglang")
    m.TestCase.settings = settings(max_examples=8, stateful_step_count=10, deadline=None)
    m.TestCase().runTest()
