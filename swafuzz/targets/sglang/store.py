"""The release's own Triton V4-layout SWA store, for pools of layout ``"dsv4"`` (spec §4.6).

SGLang's CUDA JIT store (``fused_store_cache``) needs a GPU; each release also ships a Triton
store of the same layout, which the ``sglang`` target runs (interpreted on CPU): 0.5.23
``triton_fused_store_flashmla`` (``kernels/ops/kvcache/triton_store_cache.py``, one launch);
0.5.12 ``quant_to_nope_fp8_rope_bf16_pack_triton`` (``dsv4/quant_k_cache.py``) then
``SetKAndS.triton`` (``dsv4/index_buf_accessor.py``). Both go through
:func:`kernels.launch.launch` after :mod:`kernels.dsv4_store`'s host-side contract.

Interpreter fp8 cast: the Triton 3.6 interpreter's fp32 -> fp8 e4m3 conversion is not
round-to-nearest-even (1030 of 34754 bf16 codes with ``|x| <= 448`` differ; triton-lang/triton
issue #8322, PR #11897). While a store is interpreted, :func:`rne_fp8_interpreter` routes that
conversion alone to torch's cast (RNE, saturating like hardware;
``tests/features/dsv4_layout/test_dsv4_quant.py``); the kernel is unchanged.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Iterator

import torch

from swafuzz.kernels import contracts, dsv4_store
from swafuzz.kernels.launch import launch
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang import release
from swafuzz.targets.sglang.environ import set_attr

VERSION, ADAPTER = release()

def _find_fused_store():
    """The release's Triton V4-layout fused store (0.5.20+ ``kernels.ops``, earlier resolver
    releases ``jit_kernel``); None when neither has it (0.5.12)."""
    for name in ("sglang.kernels.ops.kvcache.triton_store_cache",
                 "sglang.jit_kernel.triton_store_cache"):
        try:
            fn = getattr(importlib.import_module(name), "triton_fused_store_flashmla", None)
        except ModuleNotFoundError:
            continue
        if fn is not None:
            return fn
    return None


triton_fused_store_flashmla = _find_fused_store()
#: the release has no fused Triton store: its quantizer + SetKAndS pair (0.5.12)
QUANT_PAIR = triton_fused_store_flashmla is None
if QUANT_PAIR:
    try:
        from sglang.srt.layers.attention.dsv4.index_buf_accessor import SetKAndS
        from sglang.srt.layers.attention.dsv4.quant_k_cache import (
            quant_to_nope_fp8_rope_bf16_pack_triton,
        )
    except ModuleNotFoundError as e:  # pragma: no cover - depends on the release
        raise TargetUnavailable(
            f"target sglang: sglang {VERSION} has neither triton_fused_store_flashmla nor "
            f"layers.attention.dsv4's quantizer + SetKAndS ({e}); pool layout dsv4 cannot run "
            "its store") from None

#: The upstream function(s) this module runs, for the real/modelled table and reports.
RELEASE_STORE = ("quant_to_nope_fp8_rope_bf16_pack_triton + SetKAndS.triton"
                 if QUANT_PAIR else "triton_fused_store_flashmla")


def _interpreting(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


@contextlib.contextmanager
def rne_fp8_interpreter() -> Iterator[None]:
    """While active, the Triton interpreter's fp32 -> float8e4nv conversion rounds to nearest
    even (torch's cast); every other conversion is the interpreter's own."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as interp

    builder = interp.InterpreterBuilder
    original = builder.create_fp_to_fp

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if (src.dtype.scalar == tl.float32 and dst_type.scalar == tl.float8e4nv
                and rounding_mode == interp._ir.ROUNDING_MODE.RTNE):
            data = np.ascontiguousarray(src.data, dtype=np.float32)
            codes = torch.from_numpy(data.copy()).to(torch.float8_e4m3fn).view(torch.uint8)
            return interp.TensorHandle(codes.numpy().reshape(src.data.shape), dst_type.scalar)
        return original(self, src, dst_type, rounding_mode)

    with set_attr(builder, "create_fp_to_fp", create_fp_to_fp):
        yield


def _run_release_store(rows: torch.Tensor, cache: torch.Tensor, loc: torch.Tensor,
                       page_size: int) -> None:
    ctx = rne_fp8_interpreter() if _interpreting(cache) else contextlib.nullcontext()
    with ctx:
        if QUANT_PAIR:
            pack = quant_to_nope_fp8_rope_bf16_pack_triton(rows)
            SetKAndS.triton(_PageSize(page_size), cache, loc, pack)
        else:
            triton_fused_store_flashmla(rows, cache, loc, page_size)


class _PageSize:
    """The one pool attribute ``SetKAndS.triton`` reads."""

    def __init__(self, page_size: int):
        self.page_size = page_size


def release_store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, page_size: int,
                  checked: bool = True) -> None:
    """Quantize ``rows`` (bf16 ``[N, 512]``) into ``cache`` (uint8 ``[pages, stride]``) at
    ``loc`` (int32 ``[N]``) with the release's Triton V4 store (one :func:`launch`)."""
    dsv4_store.check_static(cache, loc, rows, page_size)
    if loc.numel() == 0:
        return
    def validate() -> None:
        contracts.check_store_values(cache.new_empty((cache.shape[0], page_size, 0)), loc,
                                     op="sglang_dsv4_store")

    launch(f"sglang.{RELEASE_STORE}", _run_release_store, (rows, cache, loc, page_size),
           validate if checked else None)

