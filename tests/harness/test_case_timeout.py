"""The per-case limit (swafuzz/harness/pipeline/casetime.py, the case worker): a Case that hangs
in the code under test is a ``timeout`` finding and the next Case gets a fresh child; time the
child spent waiting for a CPU (a busy machine) is not counted against the Case."""

from __future__ import annotations

import os
import sys

import pytest

from swafuzz.harness.pipeline.casetime import CaseClock, waited_s
from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.scenarios.case import Case, Step


def test_waiting_for_a_cpu_is_not_the_cases_time():
    t, w = [100.0], [7.0]
    clock = CaseClock(1, read=lambda pid: w[0], now=lambda: t[0])
    t[0], w[0] = 160.0, 47.0  # 60 s of wall, 40 of them runnable but not running
    assert clock.waited() == 40.0 and clock.charged() == 20.0
    w[0] = 1000.0  # never more than the wall time
    assert clock.waited() == 60.0 and clock.charged() == 0.0
    unknown = CaseClock(1, read=lambda pid: None, now=lambda: t[0])
    t[0] = 190.0
    assert unknown.waited() == 0.0 and unknown.charged() == 30.0  # no schedstat: wall time


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_schedstat_is_read():
    assert waited_s(os.getpid()) is not None and waited_s(-1) is None


def test_a_case_that_hangs_is_a_timeout_finding_and_the_next_case_runs(tmp_path):
    # the limit is tiny on purpose: the Case never answers, so it crosses any limit; the
    # outcome does not depend on how fast the machine is
    w = CaseWorker("selftest:hang", "torch", ["eager"], str(tmp_path), timeout_s=1.0)
    try:
        case = Case(steps=(Step("admit", rid=0, length=1), Step("finish", rid=0)))
        v = w.run(case)
        assert [f.check for f in v.failures] == ["timeout"], v.failures
        assert v.failures[0].message.startswith("timeout: the case ran past 1 s")
        assert w._proc is None  # the hung child is gone; the next Case starts a fresh one
        assert [f.check for f in w.run(case).failures] == ["timeout"]
    finally:
        w.close(kill=True)
