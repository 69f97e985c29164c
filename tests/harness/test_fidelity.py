"""Fidelity: the tape executor and real CUDA graphs agree bit for bit on the same work.

Both run on ``cuda`` tensors, on the scenarios of test_tape.py (same seeds, so the same batches):
this is the evidence that CPU CI (tape) sees the graph bugs the GPU (cudagraph) would. GPU only
(markers ``gpu`` and ``cudagraph``); skipped with a visible reason without CUDA.
"""

from __future__ import annotations

import pytest
import torch

try:
    from test_tape import (
        _triton_or_skip,
        scenario_fresh,
        scenario_restore,
        scenario_stale,
        scenario_triton,
        scenario_two_graphs,
    )
except ImportError:  # imported as a package module (pytest --import-mode=importlib)
    from tests.harness.test_tape import (
        _triton_or_skip,
        scenario_fresh,
        scenario_restore,
        scenario_stale,
        scenario_triton,
        scenario_two_graphs,
    )

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.cudagraph,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA GPU (tape vs real torch.cuda.CUDAGraph)"
    ),
]


def _both(scenario, keys):
    from swafuzz.harness.executors.cudagraph import CudaGraphExecutor
    from swafuzz.harness.executors.tape import TapeExecutor

    tape = scenario(TapeExecutor("cuda"), "cuda")
    graph = scenario(CudaGraphExecutor("cuda"), "cuda")
    return {k: tape[k] for k in keys}, {k: graph[k] for k in keys}


@pytest.mark.parametrize(
    "scenario,keys",
    [
        (scenario_fresh, ("outs", "caches")),
        (scenario_two_graphs, ("got",)),
        (scenario_stale, ("stale_baked", "stale_in_graph", "results")),
        (scenario_restore, ("after_capture", "values")),
    ],
    ids=["fresh", "two_graphs", "stale", "restore"],
)
def test_tape_and_cudagraph_bit_identical(scenario, keys):
    tape, graph = _both(scenario, keys)
    assert tape == graph


def test_tape_and_cudagraph_bit_identical_triton():
    _triton_or_skip()
    tape, graph = _both(scenario_triton, ("got",))
    assert tape == graph
