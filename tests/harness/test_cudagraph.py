"""The ``cudagraph`` executor (real ``torch.cuda.CUDAGraph``) on the scenarios of test_tape.py.

GPU only: every test is marked ``gpu`` and ``cudagraph`` and skips with a visible reason when no
CUDA device is available. Expected values come from the plain-Python oracles of test_tape.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

try:
    from test_tape import (
        REPLAYS,
        SLOTS,
        D,
        _triton_or_skip,
        scenario_fresh,
        scenario_restore,
        scenario_stale,
        scenario_triton,
        scenario_two_graphs,
    )
except ImportError:  # imported as a package module (pytest --import-mode=importlib)
    from tests.harness.test_tape import (
        REPLAYS,
        SLOTS,
        D,
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
        not torch.cuda.is_available(), reason="needs a CUDA GPU (real torch.cuda.CUDAGraph)"
    ),
]

REPO = Path(__file__).resolve().parents[2]


def _executor():
    from swafuzz.harness.executors import get_executor

    ex = get_executor("cudagraph")
    assert ex.name == "cudagraph" and ex.graphs and ex.device.type == "cuda"
    return ex


def test_cudagraph_replay_rereads_static_buffers_bit_exact():
    r = scenario_fresh(_executor(), "cuda")
    assert r["outs"] == r["exp_outs"]
    assert r["caches"] == r["exp_caches"]


def test_cudagraph_two_captures_share_a_pool_and_replay_in_any_order():
    r = scenario_two_graphs(_executor(), "cuda")
    assert r["got"] == r["want"]


def test_cudagraph_host_baked_translation_stays_stale_in_graph_one_fresh():
    r = scenario_stale(_executor(), "cuda")
    assert r["stale_baked"] == REPLAYS
    assert r["stale_in_graph"] == 0


def test_cudagraph_capture_executes_nothing_and_host_values_freeze():
    r = scenario_restore(_executor(), "cuda")
    w = r["world"]
    slot = w.mapping_list[w.loc_list[0]]
    cache = torch.frombuffer(bytearray(r["after_capture"]), dtype=torch.uint8).view(SLOTS, D)
    assert cache[0].tolist() == [1] * D and cache[slot].tolist() == [1] * D
    assert r["values"] == [(2, 2), (2, 2)]


def test_cudagraph_triton_kernels():
    _triton_or_skip()
    r = scenario_triton(_executor(), "cuda")
    assert r["got"] == r["want"]


def test_cudagraph_rejects_foreign_handle():
    with pytest.raises(TypeError, match="CudaGraphExecutor.capture"):
        _executor().replay(object())


_SYNC_SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    from swafuzz.harness.executors import get_executor
    x = torch.arange(4, device="cuda")
    ops = {"item": lambda: x.sum().item(), "tolist": lambda: x.tolist(),
           "nonzero": lambda: torch.nonzero(x)}
    try:
        get_executor("cudagraph").capture(ops[sys.argv[1]])
    except RuntimeError as e:
        print("RAISED", sys.argv[1], str(e).splitlines()[0][:160])
    else:
        print("NO-ERROR", sys.argv[1])
    """
)


@pytest.mark.parametrize("op", ["item", "tolist", "nonzero"])
def test_cudagraph_host_sync_in_capture_fails(op):
    """A failed capture can leave the CUDA context unusable, so each runs in a child process."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _SYNC_SCRIPT, op], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert f"RAISED {op}" in res.stdout, (res.stdout, res.stderr[-2000:])
