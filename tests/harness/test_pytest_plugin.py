"""The pytest plugin's fixture: a failing Case fails the test with the one-line repro command
and leaves its bundle on disk; a clean Case passes."""

import json
import re

import pytest

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

CASE = Case(pool=PoolConfig(page_size=1, full_pages=4, swa_pages=4, window=2, layers=1,
                            row_width=2),
            graph=GraphConfig(buckets=(2,)),
            steps=(Step(op="admit", rid=0, length=1), Step(op="decode", rids=(0,), exec="graph"),
                   Step(op="decode", rids=(0,), exec="graph")),
            payload_seed=1, kind="decode")


def test_clean_case_passes(swafuzz_check):
    from swafuzz.harness.check_registry import all_checks

    v = swafuzz_check(CASE, impl="torch", executors=["eager", "tape"])
    # every per-observation check on each of the two executors, plus agreement
    assert not v.failed and v.checks_run == 2 * len([c for c in all_checks() if not c.across]) + 1


def test_failing_case_prints_repro(swafuzz_check):
    with pytest.raises(pytest.fail.Exception) as ei:
        swafuzz_check(CASE, target="mutant:host_baked_translation", impl="torch",
                      executors=["eager", "tape"])
    msg = str(ei.value)
    m = re.search(r"repro: swafuzz repro (\S+\.json)", msg)
    assert m, msg
    with open(m.group(1)) as f:
        assert json.load(f)["case"]["steps"][1]["op"] == "decode"
