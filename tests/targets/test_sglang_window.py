"""Issue 12 on the ``sglang`` target: SGLang 0.5.23's request window, window layout, tail
layout and resolver branches (targets/sglang/window.py) pass every check on the hand-made
window / tail / replay Cases and on each new scenario kind; 0.5.12 (no request window) refuses
such Cases with TargetUnavailable naming the release. Marker ``upstream``: skipped without
sglang; the release-specific tests skip on the other release.
Reproduce: ``PYTHONPATH=$PWD /work/main/.venv-sglang-0.5.23/bin/python -m pytest
tests/targets/test_sglang_window.py`` (and with the 0.5.12 venv).
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from hypothesis import given, settings
from swafuzz.harness.run import execute
from swafuzz.scenarios.strategies import SCENARIO_KINDS

sys.path.insert(0, os.path.dirname(__file__))
from test_window import HAND  # noqa: E402

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]


def _adapter() -> str:
    from swafuzz.targets import sglang as sg

    return sg.release()[1]


@pytest.mark.parametrize("name", sorted(HAND))
def test_real_window_code_passes_hand_cases(name):
    if _adapter() != "0.5.23":
        pytest.skip("the request window exists from 0.5.21; adapter 0.5.23 only")
    v = execute(HAND[name], "sglang", "torch", ["eager", "tape"])
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["request_window", "late_tail", "encoder_replay"])
def test_real_window_code_on_each_kind(kind):
    if _adapter() != "0.5.23":
        pytest.skip("adapter 0.5.23 only")

    @settings(max_examples=10, database=None, deadline=None)
    @given(SCENARIO_KINDS[kind]())
    def prop(case):
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_real_code_is_what_runs():
    if _adapter() != "0.5.23":
        pytest.skip("adapter 0.5.23 only")
    from sglang.srt.mem_cache import dsv41_request_window as rw
    from swafuzz.targets.sglang.engine import SGLangEngine

    e = SGLangEngine(HAND["replay"])
    assert type(e.window_path.window) is rw.RequestWindow
    obs = e.run()
    assert obs.error is None and obs.target_version.startswith("sglang 0.5.23")
    assert e.window_path.real_pool.full_to_swa_index_mapping is None  # W8: no M under a window


def test_0_5_12_refuses_window_cases():
    if _adapter() != "0.5.12":
        pytest.skip("adapter 0.5.12 only")
    from swafuzz.targets import TargetUnavailable, run_case

    with pytest.raises(TargetUnavailable, match="no request window"):
        run_case(HAND["window"], target="sglang", impl="torch")


def test_0_5_12_cli_refuses_window_kinds(capsys, tmp_path):
    if _adapter() != "0.5.12":
        pytest.skip("adapter 0.5.12 only")
    from swafuzz.harness.cli import main as cli_main

    rc = cli_main(["run", "--target", "sglang", "--scenario", "encoder_replay", "--examples",
                   "1", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2 and "no request window" in capsys.readouterr().err
