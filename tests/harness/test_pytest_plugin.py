"""The pytest plugin's fixture: a failing Case fails the test with the one-line repro command
and leaves its bundle on disk; a clean Case passes."""

import json
import os
import re
import subprocess
import sys

import pytest
from support.cases import TWO_GRAPH_DECODES
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASE = TWO_GRAPH_DECODES


def test_clean_case_passes(swafuzz_check):
    from swafuzz.checks.registry import all_checks

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


# --------------------------------------------------------------------------- issue 19, 6
HOST_TEST = '''
import json, os
import pytest
from hypothesis import settings

@pytest.mark.nightly
@pytest.mark.gpu
def test_host_state():
    d = settings.default
    print("STATE " + json.dumps({
        "max_examples": d.max_examples, "deadline": str(d.deadline),
        "derandomize": d.derandomize, "database": type(d.database).__name__,
        "profile": settings.get_current_profile_name(),
        "triton_interpret": os.environ.get("TRITON_INTERPRET")}, sort_keys=True))
'''


def _host_run(tmp_path, *args, ci=True, outcome="1 passed"):
    """A host suite in its own folder (no swafuzz ini), run with ``args``: its settings/env
    line (None when its test was skipped)."""
    (tmp_path / "test_host.py").write_text(HOST_TEST)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "HYPOTHESIS_PROFILE", "CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = ROOT
    if ci:
        env["CI"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                        "-p", "no:xdist", *args, "test_host.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and outcome in r.stdout, r.stdout + r.stderr
    state = [ln for ln in r.stdout.splitlines() if ln.startswith("STATE ")]
    return json.loads(state[0][6:]) if state else None


def test_plugin_leaves_a_host_suite_as_it_is(tmp_path):
    """Loaded into a host suite under CI=1, the plugin changes none of the host's Hypothesis
    settings, sets no TRITON_INTERPRET and skips none of its tests (its test is marked gpu and
    nightly); ``--swafuzz-suite`` opts in to swafuzz's own policy (nightly skipped)."""
    without = _host_run(tmp_path)
    with_plugin = _host_run(tmp_path, "-p", "swafuzz.harness.pytest_plugin")
    assert with_plugin == without
    assert with_plugin["triton_interpret"] is None
    _host_run(tmp_path, "-p", "swafuzz.harness.pytest_plugin", "--swafuzz-suite",
              outcome="1 skipped")


def test_plugin_profile_under_the_suite_policy(tmp_path):
    """Opted in without CI: swafuzz's ``dev`` profile (50 examples)."""
    (tmp_path / "test_p.py").write_text(
        "from hypothesis import settings\n"
        "def test_p():\n    print('PROFILE', settings.get_current_profile_name(), "
        "settings.default.max_examples)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HYPOTHESIS_PROFILE", "CI")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                        "-p", "no:xdist", "-p", "swafuzz.harness.pytest_plugin",
                        "--swafuzz-suite", "test_p.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=HANG_S, env={**env, "PYTHONPATH": ROOT})
    assert "PROFILE dev 50" in r.stdout, r.stdout + r.stderr
