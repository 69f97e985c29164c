"""The release's own Triton V4-layout SWA store, for pools of layout ``"dsv4"`` (spec §4.6).

SGLang writes the DSV4 SWA cache with its CUDA JIT store (``fused_store_cache``; needs a GPU
and a JIT build). Each release also ships a Triton store of the same V4 layout, which runs in
the Triton interpreter on CPU and compiled on a GPU; the ``sglang`` target runs that one:

* 0.5.23: ``triton_fused_store_flashmla`` (``kernels/ops/kvcache/triton_store_cache.py``, the
  ROCm dispatch of ``fused_store_cache``): one launch quantizes and scatters;
* 0.5.12: ``quant_to_nope_fp8_rope_bf16_pack_triton`` (``dsv4/quant_k_cache.py``) then
  ``SetKAndS.triton`` (``dsv4/index_buf_accessor.py``): the backend's non-fused store path,
  two launches (quantize into a pack, then scatter the pack).

Both go through :func:`kernels.launch.launch` (the tape executor records and replays them) after
the host-side contract of :mod:`kernels.dsv4_store` (int32 locations, one per row, none negative
or past the buffer).

Interpreter fp8 cast (an execution-environment fix, not a change to the kernel): the Triton
3.6 interpreter converts fp32 to fp8 e4m3 (``float8e4nv``) with its own numpy code, which is not
the round-to-nearest-even the compiled kernel gets from the hardware (``cvt.rn.satfinite``):
it rounds ties away from zero (8.5 -> 9.0), loses the carry when the mantissa rounds up into
an odd exponent (0.4863 -> 0.25) and truncates fp8 subnormals. Measured over every finite bf16
value with ``|x| <= 448``: 1030 of 34754 codes differ from torch's cast. Known upstream:
triton-lang/triton issue #8322 (interpreter fp8 casts differ from the compiled ones) and the open
PR #11897 (rewrites ``_convert_float``: ties to even, the carry, single rounding of subnormals).
While a store runs in
the interpreter, :func:`rne_fp8_interpreter` routes exactly that conversion (fp32 ->
float8e4nv, round to nearest even) to torch's cast, which rounds to nearest even and saturates
like the hardware (``tests/features/dsv4_layout/test_dsv4_quant.py`` proves torch's cast equals the plain-
Python encoder). Every other op of the kernel (loads, the tile max, the fp32 division, log2,
ceil, exp2, clamp, the address arithmetic, the stores) runs as the interpreter runs it.
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
    """The release's Triton V4-layout fused store, found by module path: ``sglang.kernels.ops.
    kvcache.triton_store_cache`` (0.5.20+) or ``sglang.jit_kernel.triton_store_cache``
    (0.5.16 and earlier resolver releases); None when neither has it (0.5.12)."""
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

