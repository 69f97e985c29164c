"""Issue 12 item 2 on the ``sglang`` target (features/request_window/dspark/sglang.py): SGLang 0.5.23's own row
expansion and ``window_layout`` for target verify under a request window pass every check; its
eager EXTEND under MLP-sync MAX_LEN padding lays the padding rows out as part of the last real
request's run (``expand_prefill_causally`` pads with the last request slot and position 0, no
``request_window_live_rows``), which the ``window`` check reports and the release's own STRICT
invariant ``dsv41.swa_history_present`` confirms one forward later; 0.5.12 refuses both kinds.
Marker ``upstream``: skipped without sglang; release-specific tests skip on the other release.
Reproduce: ``$(scripts/upstream-env 0.5.23) -m pytest tests/features/dspark/test_sglang_dspark.py``
(and with the 0.5.12 venv).
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from tests.features.dspark.test_dspark import PADDED, PADDED_OVERFLOW, VERIFY, VERIFY_P2  # noqa: E402

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]


def _adapter() -> str:
    from swafuzz.targets import sglang as sg

    return sg.release()[1]


def _only_0_5_23():
    if _adapter() != "0.5.23":
        pytest.skip("the request window exists from 0.5.21; adapter 0.5.23 only")


@pytest.mark.parametrize("case", [VERIFY, VERIFY_P2, PADDED_OVERFLOW],
                         ids=["verify", "verify_p2", "padded_overflow"])
def test_real_verify_and_refusal_pass(case):
    _only_0_5_23()
    v = execute(case, "sglang", "torch", ["eager"])
    assert not v.failures, [f.message for f in v.failures]


def test_real_code_on_dspark_verify():
    _only_0_5_23()

    @settings(max_examples=10, database=None, deadline=None)
    @given(features.strategy("dspark_verify")())
    def prop(case):
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_release_joins_padding_rows_to_the_last_run():
    """Step 2 of PADDED: rid 0 (slot 1, position 5, the last real row) is followed by 4
    padding rows. The release's layout makes them one run with it: the run's history starts
    from the padding row's position (all invalid, so the workspace history rows are the zero
    row) and the padding rows commit position 0 into slot 1's ring row 0, over position 4."""
    _only_0_5_23()
    v = execute(PADDED, "sglang", "torch", ["eager"])
    msgs = [f.message for f in v.failures]
    assert any("step 2 fwd 0 (EXTEND" in m and "history row" in m for m in msgs), msgs
    assert any("after step 2 (extend)" in m and "tags differ" in m and "expected 4 got 0" in m
               for m in msgs), msgs
    assert any("dsv41.swa_history_present" in m for m in msgs), msgs  # the release's own check
    # the same forwards without padding (other ranks no larger): clean
    same = replace(PADDED, steps=tuple(
        replace(s, rank_tokens=(1,)) if s.op in ("extend", "dp_decode") and s.rank_tokens
        else s for s in PADDED.steps))
    v = execute(same, "sglang", "torch", ["eager"])
    assert not v.failures, [f.message for f in v.failures]


def test_real_code_is_what_runs():
    _only_0_5_23()
    from swafuzz.features.request_window.dspark.sglang import SGLangDSpark
    from swafuzz.targets.sglang.engine import SGLangEngine

    e = SGLangEngine(VERIFY)
    obs = e.run()
    assert obs.error is None and type(e.step_path.dspark()) is SGLangDSpark


def test_0_5_12_cli_refuses_the_kinds(capsys, tmp_path):
    if _adapter() != "0.5.12":
        pytest.skip("adapter 0.5.12 only")
    from swafuzz.harness.cli.commands import main

    for kind, first in (("dspark_verify", "0.5.21"), ("window_dp_extend", "0.5.23")):
        rc = main(["run", "--target", "sglang", "--scenario", kind, "--examples", "1",
                   "--out", str(tmp_path / kind), "--quiet"])
        assert rc == 2 and f"(first in {first})" in capsys.readouterr().err
