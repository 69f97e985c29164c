"""The plain-Python DSV4 reference quantizer (``features/dsv4_layout/oracle.py``) against torch and numpy.

* the fp8 e4m3fn encoder equals torch's ``float8_e4m3fn`` cast on every bf16 value, on
  hypothesis fp32 values (any bits; the rounding region around the fp8 range; exact ties);
* the fp32 division equals numpy's IEEE fp32 division;
* the scale exponent taken from the fp32 bits equals ``ceil(log2f(.))`` as the Triton
  interpreter computes it (numpy fp32 ``log2``, ``ceil``), and ``exp2`` of it is exact, for
  EVERY finite bf16 tile maximum (exhaustive), with the margin that makes fp32 log2 rounding
  irrelevant;
* a token's 584 bytes have the layout the module docstring states.

The equality with SGLang's own Triton store is in ``tests/features/dsv4_layout/test_dsv4_layout.py``
(``upstream``). Reproduce: ``pytest tests/features/dsv4_layout/test_dsv4_quant.py``.
"""

import math
import struct

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from swafuzz.features.dsv4_layout import oracle as q


def _torch_codes(values: list[float]) -> list[int]:
    return torch.tensor(values, dtype=torch.float32).to(torch.float8_e4m3fn).view(
        torch.uint8).tolist()


#: torch 2.13 saturates finite overflow to +-448 (as the hardware's satfinite cast); older
#: releases give NaN. The encoder has both; compare with the mode this torch implements.
TORCH_SATURATES = _torch_codes([1e30])[0] == 0x7E


def test_every_bf16_value_encodes_as_torch_does():
    bits = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16)
    vals = bits.view(torch.bfloat16).float()
    want = vals.to(torch.float8_e4m3fn).view(torch.uint8).tolist()
    got = [q.e4m3fn_code(v, saturate=TORCH_SATURATES) for v in vals.tolist()]
    bad = [(v, w, g) for v, w, g in zip(vals.tolist(), want, got) if w != g]
    assert not bad, f"{len(bad)} of 65536 bf16 values differ, first {bad[:3]}"


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


@given(st.lists(st.one_of(
    st.integers(0, 2**32 - 1),  # any fp32 bits (NaN, inf, subnormals included)
    st.integers(0x3A000000, 0x43F80000),  # 2**-11 .. 496: the fp8 range and its rounding edge
    st.integers(0x3A000000, 0x43F80000).map(lambda b: (b & ~0xFFFFF) | 0x80000),  # exact ties
    st.integers(0x3A000000, 0x43F80000).map(lambda b: b | 0x80000000),  # negatives
), min_size=1, max_size=64))
def test_fp32_values_encode_as_torch_does(bits):
    vals = [_f32(b) for b in bits]
    got = [q.e4m3fn_code(v, saturate=TORCH_SATURATES) for v in vals]
    assert got == _torch_codes(vals)


def test_encoder_edges():
    assert q.e4m3fn_code(8.5) == 0x50  # a tie to even (8.0), not away (9.0)
    assert q.e4m3fn_code(9.5) == 0x52  # a tie to even (10.0)
    assert q.e4m3fn_code(0.486328125) == 0x30  # rounds up into the next binade: 0.5
    assert q.e4m3fn_code(3 * 2.0 ** -11) == 0x01  # subnormal tie to even: 2**-9
    assert q.e4m3fn_code(2.0 ** -10) == 0x00 and q.e4m3fn_code(-2.0 ** -10) == 0x80
    assert q.e4m3fn_code(464.0) == 0x7E and q.e4m3fn_code(464.0, saturate=False) == 0x7E
    assert q.e4m3fn_code(470.0, saturate=False) == 0x7F and q.e4m3fn_code(470.0) == 0x7E
    assert q.e4m3fn_code(-math.inf) == 0xFE and q.e4m3fn_code(math.nan) == 0x7F
    for code in range(256):
        v = q.e4m3fn_value(code)
        if not math.isnan(v):
            assert q.e4m3fn_code(v) == code


@given(st.lists(st.integers(0x00800000, 0x7F7FFFFF), min_size=1, max_size=32),
       st.sampled_from([448.0, 240.0, 3.0, 1e-8, 7.0]))
def test_f32_div_is_ieee_fp32_division(bits, d):
    a = np.array(bits, dtype=np.uint32).view(np.float32)
    den = np.float32(d)
    with np.errstate(over="ignore", under="ignore"):
        want = (a / den).astype(np.float32)
    for x, w in zip(a.tolist(), want.tolist()):
        if 2.0 ** -126 <= w < math.inf:
            assert q.f32_div(x, float(den)) == w


def test_scale_exponent_equals_the_interpreters_log2_ceil_for_every_bf16_amax():
    """Exhaustive: every positive finite bf16 ``amax`` (and 0), both epsilons."""
    bits = np.arange(0, 0x7F80, dtype=np.uint32) << 16
    amax = bits.view(np.float32)
    for eps in (q.EPS_TRITON, q.EPS_CUDA):
        scale = np.maximum(amax, np.float32(eps)) / np.float32(448.0)  # the kernel's fp32 ops
        k = np.ceil(np.log2(scale))
        inv = np.exp2(-k)
        ours = [q.ceil_log2_f32(q.f32_div(max(a, eps), 448.0)) for a in amax.tolist()]
        assert ours == k.astype(np.int64).tolist()
        assert all(float(i) == 2.0 ** -e for i, e in zip(inv.tolist(), ours))  # exp2 exact
        # the margin: a scale is a power of two or >= 2**-8 (relative) above one, so any log2
        # accurate to that (fp32 log2 is far better) gives the same ceiling
        s64 = scale.astype(np.float64)
        rel = s64 / np.exp2(np.floor(np.log2(s64))) - 1
        assert rel[rel > 0].min() > 2.0 ** -8


def test_page_stride_and_token_layout():
    assert [q.page_stride(p) for p in (1, 2, 4, 16, 64, 256)] == \
        [1152, 1728, 2880, 9792, 37440, 149760]
    row = [0x3F80] * 64 + [0] * 384 + [0xC000 + i for i in range(64)]  # 1.0 tile, zeros, rope
    tok = q.quantize_token(row, pad_byte=0x5A)
    assert len(tok) == q.TOKEN_BYTES == 584
    # tile 0: amax 1 -> scale 1/448 -> e = -8 (2**-8 >= 1/448): 1.0 * 2**8 = 256 = 0x78
    assert tok[:64] == bytes([0x78]) * 64 and tok[576] == 127 - 8
    assert tok[64:448] == bytes(384)  # zero tiles quantize to +0
    assert list(tok[577:583]) == [127 - 35] * 6  # zero tile: max(0, 1e-8) / 448 -> 2**-35
    assert tok[448:576] == b"".join((0xC000 + i).to_bytes(2, "little") for i in range(64))
    assert tok[583] == 0x5A  # the scale pad keeps what the pool held
    with pytest.raises(ValueError, match="non-finite"):
        q.quantize_token([0x7F80] + [0] * 511, 0)


@given(st.lists(st.integers(0, 0xFFFF).filter(lambda b: b & 0x7F80 != 0x7F80),
                min_size=512, max_size=512))
def test_quantized_values_dequantize_within_half_an_fp8_step(row):
    tok = q.quantize_token(row, 0)
    for t in range(7):
        e = tok[576 + t] - 127
        for j in range(64):
            x = q.bf16_value(row[t * 64 + j])
            y = q.e4m3fn_value(tok[t * 64 + j]) * 2.0 ** e
            ulp = 2.0 ** (max(math.frexp(abs(x) * 2.0 ** -e)[1] - 1, -6) - 3 + e)
            assert abs(y - x) <= ulp / 2
