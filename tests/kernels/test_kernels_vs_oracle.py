"""Property tests: every kernel implementation usable on CPU equals the plain-Python oracles.

What is tested
    ``translate``, ``store`` and ``translate_store`` of each implementation available here
    (``torch``; ``triton`` through the interpreter on CPU; compiled Triton and the CUDA twins are
    covered by ``test_gpu_kernels.py``) against ``oracles.translation`` and ``oracles.store``:
    random mappings with unmapped (0) entries, large int32 values and the ``-1`` sentinel,
    negative (wrapping) locations, page sizes 1..256, N from 0 to a few thousand (biased small),
    bfloat16 and uint8 rows, odd row widths, padded page strides, ``out=`` buffers.

How it is verified
    Bit for bit: translated locations as int lists with dtype int32; pool bytes as raw bytes
    (``tensor.view(torch.uint8)``), so bfloat16 NaN payloads count. The cache is a view into the
    middle of a larger buffer whose two ends hold a canary; after every valid store both
    redzones must be intact and every slot outside the dummy page 0 (plus page padding) must equal
    the shadow store. Random bytes fill the pool first, so untouched slots are checked too.
    Hypothesis draws the shape parameters and a seed; bulk data come from ``random.Random(seed)``
    (deterministic, fast). Each example is a single kernel launch (interpreter cost).

How to reproduce
    ``HYPOTHESIS_PROFILE=ci /tmp/venv/bin/pytest tests/kernels/test_kernels_vs_oracle.py -q``
    (derandomized). A failure prints the falsifying example (its parameters and seed) and, with
    the ``ci`` profile, a ``@reproduce_failure`` blob.

How to extend
    Add an implementation to ``kernels.IMPLS``/``available_impls`` and it is picked up by
    ``IMPLS_HERE``; add a parameter to the ``*_cases`` strategies to widen the input space.
    CPU time: ~4 s for this module under the ``dev``/``ci`` profiles on 2 cores.
"""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from swafuzz import kernels
from swafuzz.oracles import store as store_oracle
from swafuzz.oracles import translation as translation_oracle

CANARY = 0xA5
REDZONE_BYTES = 64


def _impls_here() -> list[str]:
    names = []
    for name in kernels.available_impls():
        if name == "cuda":
            continue  # test_gpu_kernels.py
        if name == "triton" and torch.cuda.is_available():
            continue  # compiled Triton needs CUDA tensors: test_gpu_kernels.py
        names.append(name)
    return names


IMPLS_HERE = _impls_here()

# N biased small: most examples are tiny, some reach a few thousand rows.
n_rows = st.one_of(st.integers(0, 4), st.integers(0, 64), st.integers(0, 3000))
page_sizes = st.integers(0, 8).map(lambda k: 1 << k)
seeds = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------------------------
# builders (plain data first, tensors from it)
# ---------------------------------------------------------------------------------------------


def _mapping_values(rng: random.Random, length: int, page_size: int, wide: bool) -> list[int]:
    """``length`` entries: 0 (unmapped) or a SWA id; the last one is the -1 sentinel."""
    vals = []
    for _ in range(length - 1):
        u = rng.random()
        if u < 0.3:
            vals.append(0)
        elif wide and u < 0.4:
            vals.append(rng.choice([2**31 - 1, 2**31 - 2, -(2**31), rng.randrange(-(2**31), 0)]))
        else:
            vals.append(rng.randrange(page_size, page_size + 4 * length))
    return vals + [-1]


class Pool:
    """A cache view ``[num_pages, P, D]`` inside a redzoned buffer, with its shadow."""

    def __init__(self, rng: random.Random, num_pages: int, page_size: int, d: int,
                 dtype: torch.dtype, pad: int) -> None:
        es = torch.tensor([], dtype=dtype).element_size()
        self.es = es
        self.stride = page_size * d + pad  # elements
        self.front = REDZONE_BYTES // es
        body = num_pages * self.stride
        total = self.front + body + REDZONE_BYTES // es
        raw = bytearray([CANARY]) * (total * es)
        init = rng.randbytes(body * es)
        lo = self.front * es
        raw[lo:lo + len(init)] = init
        self.buf = torch.frombuffer(raw, dtype=torch.uint8).clone().view(dtype)
        self.cache = self.buf.as_strided((num_pages, page_size, d), (self.stride, d, 1),
                                         self.front)
        self.shadow = store_oracle.ShadowStore(page_size, d * es, num_pages, bytes(init),
                                               page_stride_bytes=self.stride * es)
        self.body_bytes = (lo, lo + len(init))

    def check(self) -> None:
        raw = bytes(self.buf.view(torch.uint8).numpy())
        lo, hi = self.body_bytes
        assert raw[:lo] == bytes([CANARY]) * lo, "redzone before the cache was written"
        assert raw[hi:] == bytes([CANARY]) * (len(raw) - hi), "redzone after the cache was written"
        bad = self.shadow.mismatches(raw[lo:hi])
        assert bad == [], f"cache differs from the shadow store at {bad[:10]} (of {len(bad)})"


def _rows(rng: random.Random, n: int, d: int, dtype: torch.dtype) -> tuple[torch.Tensor, list]:
    es = torch.tensor([], dtype=dtype).element_size()
    data = rng.randbytes(n * d * es)
    rows = torch.frombuffer(bytearray(data), dtype=torch.uint8).clone().view(dtype).view(n, d) \
        if n else torch.empty(0, d, dtype=dtype)
    row_bytes = d * es
    return rows, [data[i * row_bytes:(i + 1) * row_bytes] for i in range(n)]


def _unique_targets(rng: random.Random, n: int, page_size: int, slots: int) -> list[int]:
    """``n`` write locations: distinct real slots (>= P) mixed with dummy-page slots (< P)."""
    real = min(n, slots - page_size, rng.randrange(0, n + 1))
    locs = rng.sample(range(page_size, slots), real) if real > 0 else []
    locs += [rng.randrange(0, page_size) for _ in range(n - len(locs))]
    rng.shuffle(locs)
    return locs


# ---------------------------------------------------------------------------------------------
# translate
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS_HERE)
@given(n=n_rows, page_size=page_sizes, full_pages=st.integers(0, 16), seed=seeds,
       wide=st.booleans(), use_out=st.booleans())
def test_translate_matches_oracle(impl, n, page_size, full_pages, seed, wide, use_out):
    k = kernels.get_impl(impl)
    rng = random.Random(seed)
    length = full_pages * page_size + page_size + 1
    mapping = _mapping_values(rng, length, page_size, wide)
    special = [-1, 0, length - 1, -length, -2]
    loc = [rng.choice(special) if rng.random() < 0.1 else rng.randrange(-length, length)
           for _ in range(n)]
    expected = translation_oracle.translate(mapping, loc)

    m_t = torch.tensor(mapping, dtype=torch.int64)
    loc_t = torch.tensor(loc, dtype=torch.int64)
    if use_out:
        out = torch.full((n,), 12345, dtype=torch.int32)
        res = k.translate(m_t, loc_t, out=out)
        assert res is out
    else:
        res = k.translate(m_t, loc_t)
    assert res.dtype == torch.int32 and tuple(res.shape) == (n,)
    assert res.tolist() == expected
    assert m_t.tolist() == mapping and loc_t.tolist() == loc  # inputs untouched


# ---------------------------------------------------------------------------------------------
# store
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS_HERE)
@given(n=n_rows, page_size=page_sizes, num_pages=st.integers(1, 12), seed=seeds,
       d=st.one_of(st.integers(1, 9), st.integers(1, 80), st.just(576)),
       dtype=st.sampled_from([torch.bfloat16, torch.uint8]), pad=st.sampled_from([0, 0, 3, 64]))
def test_store_matches_shadow(impl, n, page_size, num_pages, seed, d, dtype, pad):
    k = kernels.get_impl(impl)
    rng = random.Random(seed)
    if d == 576:  # the real row width: keep the example small
        n, num_pages = min(n, 300), min(num_pages, 3)
    pool = Pool(rng, num_pages, page_size, d, dtype, pad)
    locs = _unique_targets(rng, n, page_size, num_pages * page_size)
    rows, row_bytes = _rows(rng, len(locs), d, dtype)
    pool.shadow.store(zip(locs, row_bytes))

    k.store(pool.cache, torch.tensor(locs, dtype=torch.int32), rows)
    pool.check()


# ---------------------------------------------------------------------------------------------
# translate_store
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS_HERE)
@given(n=n_rows, page_size=page_sizes, full_pages=st.integers(0, 12),
       swa_pages=st.integers(1, 12), seed=seeds, d=st.integers(1, 40),
       dtype=st.sampled_from([torch.bfloat16, torch.uint8]), use_out=st.booleans())
def test_translate_store_matches_oracles(impl, n, page_size, full_pages, swa_pages, seed, d,
                                         dtype, use_out):
    k = kernels.get_impl(impl)
    rng = random.Random(seed)
    length = full_pages * page_size + page_size + 1
    swa_slots = swa_pages * page_size
    # Injective mapping on mapped entries, so distinct locations never share a real target.
    real = rng.sample(range(page_size, swa_slots), min(swa_slots - page_size, length - 1))
    mapping = [0] * (length - 1) + [-1]
    for f, s in zip(rng.sample(range(length - 1), len(real)), real):
        if rng.random() < 0.8:
            mapping[f] = s
    # Distinct mapping indices (never the sentinel), some written in their negative form.
    # Rows beyond that repeat unmapped entries (they all land in the dummy page).
    idx = rng.sample(range(length - 1), min(n, length - 1))
    unmapped = [i for i in range(length - 1) if mapping[i] == 0]
    if unmapped:
        idx += [rng.choice(unmapped) for _ in range(n - len(idx))]
    loc = [i - length if rng.random() < 0.2 else i for i in idx]
    swa = translation_oracle.translate(mapping, loc)

    pool = Pool(rng, swa_pages, page_size, d, dtype, pad=rng.choice([0, 5]))
    rows, row_bytes = _rows(rng, len(loc), d, dtype)
    pool.shadow.store(zip(swa, row_bytes))

    m_t = torch.tensor(mapping, dtype=torch.int64)
    loc_t = torch.tensor(loc, dtype=torch.int64)
    if use_out:
        out = torch.full((len(loc),), -7, dtype=torch.int32)
        res = k.translate_store(m_t, loc_t, rows, pool.cache, out=out)
        assert res is out
    else:
        res = k.translate_store(m_t, loc_t, rows, pool.cache)
    assert res.dtype == torch.int32
    assert res.tolist() == swa
    pool.check()


# ---------------------------------------------------------------------------------------------
# fixed examples (readable anchors for the properties above)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_sentinel_and_wrap_examples(impl):
    k = kernels.get_impl(impl)
    mapping = torch.tensor([0, 4, 5, 0, 7, -1], dtype=torch.int64)
    loc = torch.tensor([-1, 0, 1, 3, -2, -6, 5], dtype=torch.int64)
    assert k.translate(mapping, loc).tolist() == [-1, 0, 4, 0, 7, 0, -1]


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_bf16_nan_payloads_are_bit_exact(impl):
    k = kernels.get_impl(impl)
    patterns = [0x7FC1, 0xFFFF, 0x7F81, 0x8000, 0x0001, 0xFF80]  # NaNs, -0, denormal, -inf
    rows = torch.tensor(patterns, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    rows = rows.view(1, len(patterns)).repeat(2, 1).contiguous()
    cache = torch.zeros(2, 2, len(patterns), dtype=torch.bfloat16)
    k.store(cache, torch.tensor([2, 3], dtype=torch.int32), rows)
    got = cache[1].view(torch.int16).to(torch.int32) & 0xFFFF
    assert got.tolist() == [patterns, patterns]


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_empty_batch_launches_nothing(impl):
    k = kernels.get_impl(impl)
    cache = torch.zeros(2, 4, 3, dtype=torch.uint8)
    k.store(cache, torch.empty(0, dtype=torch.int32), torch.empty(0, 3, dtype=torch.uint8))
    mapping = torch.tensor([0, 1, -1], dtype=torch.int64)
    out = k.translate_store(mapping, torch.empty(0, dtype=torch.int64),
                            torch.empty(0, 3, dtype=torch.uint8), cache)
    assert out.dtype == torch.int32 and out.numel() == 0
    assert k.translate(mapping, torch.empty(0, dtype=torch.int64)).numel() == 0
    assert int(cache.sum()) == 0


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_translate_spans_several_programs(impl):
    """N above the largest interpreter block (4096): several programs, a ragged last block."""
    k = kernels.get_impl(impl)
    rng = random.Random(9)
    mapping = _mapping_values(rng, 2 * 256 + 1, 256, wide=True)
    loc = [rng.randrange(-len(mapping), len(mapping)) for _ in range(9001)]
    res = k.translate(torch.tensor(mapping, dtype=torch.int64), torch.tensor(loc))
    assert res.tolist() == translation_oracle.translate(mapping, loc)
