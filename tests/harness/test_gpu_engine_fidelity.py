"""GPU: the engine under real CUDA graphs, and tape-vs-cudagraph fidelity on whole Cases.

What: generated Cases of every scenario kind run on ``unified`` under eager, tape and cudagraph
with compiled Triton and the CUDA C++ twins; all checks must pass (agreement included). For
mutants whose bug lives in graph semantics, tape and cudagraph observations must be identical
to each other (the proof that CPU CI sees the graph bugs the GPU would) and both must fail.
Skipped without a GPU. Reproduce: ``pytest -m gpu tests/harness/test_gpu_engine_fidelity.py``.
"""

import pytest
import torch
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.cross import check_agreement
from swafuzz.harness.executors import get_executor
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.targets import run_case

pytestmark = [pytest.mark.gpu, pytest.mark.cudagraph]


@pytest.mark.parametrize("impl", ["triton", "cuda"])
@pytest.mark.parametrize("kind", sorted(features.default_kind_names()))
def test_unified_clean_under_all_executors(kind, impl):
    @settings(max_examples=6, deadline=None, derandomize=True)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", impl, ["eager", "tape", "cudagraph"])
        assert not v.failed, [f.message for f in v.failures[:3]]

    prop()


@pytest.mark.parametrize("mutant,kind", [
    ("host_baked_translation", "decode"),
    ("pad_rows_not_zeroed", "decode"),
    ("draft_extend_zeros", "draft_extend"),
])
def test_tape_and_cudagraph_agree_on_mutants(mutant, kind):
    seen = {"failed": 0}

    @settings(max_examples=10, deadline=None, derandomize=True)
    @given(features.strategy(kind)())
    def prop(case):
        expect(case)
        obs = [run_case(case, f"mutant:{mutant}", "triton", get_executor(e))
               for e in ("tape", "cudagraph")]
        assert not check_agreement(case, obs), "tape and cudagraph disagree"
        v = execute(case, f"mutant:{mutant}", "triton", ["eager", "cudagraph"])
        seen["failed"] += v.failed

    prop()
    assert seen["failed"] > 0, f"{mutant} never failed under cudagraph"


def test_device_is_cuda():
    assert torch.cuda.is_available()
