"""Attention TP 2 at server level: the release's MLP-sync padding on 2 gloo processes inside the
``sglang`` target's pipeline (marker ``upstream``: needs SGLang 0.5.22+; one DPSync for the
module, about 20-30 s to bring up)."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)")]


@pytest.fixture(scope="module", autouse=True)
def _ranks():
    """The pipeline and the release's bring-up here (else skip); the ranks stopped after."""
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.targets import TargetUnavailable

    try:
        pipeline_of("sglang")
        from swafuzz.features.dp import sglang_server_pad
    except TargetUnavailable as e:
        pytest.skip(str(e))
    from swafuzz.targets.sglang.pipeline.argnames import unpadded
    why = unpadded({"tp_size": 2}, "installed")
    if why:  # the release's shape has no bring-up the padding hop drives (0.5.12)
        pytest.skip(why)
    yield
    sglang_server_pad.close_all()


def _case(tp: int) -> dict:
    cfg = {"page_size": 1, **({"tp_size": 2, "moe_dense_tp_size": 1} if tp == 2 else {})}
    return {"config": cfg,
            "model": {"full_tokens": 64, "swa_tokens": 48, "sliding_window": 3, "layers": 1},
            "requests": [{"prompt_len": 3, "max_new_tokens": 3},
                         {"prompt_len": 2, "max_new_tokens": 2},
                         {"prompt_len": 2, "max_new_tokens": 3},
                         {"prompt_len": 4, "max_new_tokens": 2, "arrive_step": 2}]}


def _run(tp: int, mutant: str | None = None):
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    return execute(parse(_case(tp)), pipeline_of("sglang"), mutant=mutant)


def test_odd_batches_are_padded_to_the_dummy_slot_and_pass():
    v = _run(2)
    assert v.obs.error is None, v.obs.error
    assert not v.failed, [f.message for f in v.failures]
    fw = v.obs.forwards
    # EXTEND of 3+2+2 = 7 rows -> 8; DECODE of 3 -> 4 (batch and seq_lens padded with 1)
    assert fw[0].mode == "EXTEND" and len(fw[0].stores[0]) == 8 and fw[0].stores[0][-1] == 0
    assert fw[1].mode == "DECODE" and len(fw[1].stores[0]) == 4 and fw[1].seq_lens[-1] == 1
    assert all(len(f.stores[0]) % 2 == 0 for f in fw)
    one = _run(1)  # one rank: no padding
    assert not one.failed and len(one.obs.forwards[0].stores[0]) == 7


def test_the_oracle_sees_the_padding_rule_changed(monkeypatch):
    """The release's ceil_align to attn_tp_size removed in the ranks (release mutant
    no_attn_tp_align): the padded rows the oracle predicts are missing."""
    from swafuzz.features.dp import sglang_server_pad

    monkeypatch.setattr(sglang_server_pad, "_ACTIVE", ["no_attn_tp_align"])
    v = _run(2)
    assert v.failed and v.failures[0].check in ("write_targets", "batch_shape"), v.failures


def test_pad_live_loc_killed_only_at_server_level():
    """Server mutant server_pad_live_loc (spec §9.5): attention TP 2 kills it; one rank (no
    padding) and a component-level Case under the same patch pass."""
    from swafuzz.harness.pipeline.execute import execute as component_execute
    from swafuzz.scenarios.case import Case, PoolConfig, Step
    from swafuzz.targets.sglang.pipeline.mutants import patched

    v = _run(2, "server_pad_live_loc")
    assert v.failed and v.failures[0].check in ("contracts", "write_targets"), v.failures
    assert not _run(1, "server_pad_live_loc").failed
    comp = Case(pool=PoolConfig(page_size=1, full_pages=32, swa_pages=24, window=3, layers=1,
                                draft_layers=1),
                steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                       Step("decode", rids=(0, 1)), Step("finish", rid=1),
                       Step("decode", rids=(0,))))
    with patched("server_pad_live_loc"):
        cv = component_execute(comp, "sglang", "torch", ["eager"])
    assert not cv.failed, [f.message for f in cv.failures]
