"""GPU tests: compiled Triton kernels and the CUDA C++ twins against the plain-Python oracles.

What is tested (marker ``gpu``; skipped with a visible reason when CUDA is absent)
    ``translate``, ``store`` and ``translate_store`` of ``triton`` (compiled), ``cuda`` (NVRTC
    twins) and ``torch`` on CUDA tensors, over a fixed grid of shapes: page sizes 1/16/256, row
    widths 1/7/65/576, bfloat16 and uint8, padded page strides (which change the CUDA chunk width),
    N from 0 to 65536; the translate_store path captured in a real ``torch.cuda.CUDAGraph`` and
    replayed with new locations (graph-stable ``out``); the cuda implementation refusing CPU
    tensors with a ContractError.

How it is verified
    As in ``test_kernels_vs_oracle.py``: translated locations equal ``oracles.translation`` as
    int32 lists; pool bytes equal ``oracles.store.ShadowStore`` outside the dummy page (raw bytes,
    so bfloat16 NaN payloads count); canary redzones around the cache view stay intact. Inputs
    come from ``random.Random(seed)`` with the seed in the test id.

How to reproduce
    On the GPU machine: ``pytest tests/kernels/test_gpu_kernels.py -m gpu -q``; one case:
    ``-k "store and cuda and 576"``.

How to extend
    Add a row to ``SHAPES``; each new (row width, dtype) costs one Triton compile (~1 s) and each
    new CUDA chunk width one NVRTC compile (~1 s).
"""

from __future__ import annotations

import random

import pytest
import torch

from swafuzz import kernels
from swafuzz.kernels.contracts import ContractError
from swafuzz.oracles import store as store_oracle
from swafuzz.oracles import translation as translation_oracle

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="needs a CUDA GPU (compiled Triton, CUDA C++ twins)"),
]

GPU_IMPLS = ["torch", "triton", "cuda"]
CANARY = 0xA5
RED = 256  # redzone bytes on each side

# (page_size, d, dtype, n, num_pages, pad_elements)
SHAPES = [
    (1, 1, torch.uint8, 0, 1, 0),
    (1, 7, torch.uint8, 37, 64, 0),
    (16, 65, torch.bfloat16, 1000, 80, 3),
    (16, 64, torch.bfloat16, 1000, 80, 0),
    (256, 576, torch.bfloat16, 65536, 300, 0),
    (256, 576, torch.uint8, 5000, 30, 8),
    (256, 7, torch.bfloat16, 3000, 20, 1),
]


def _shape_id(s):
    p, d, dt, n, pages, pad = s
    return f"P{p}-D{d}-{str(dt).removeprefix('torch.')}-N{n}-pad{pad}"


class Pool:
    """Cache view ``[num_pages, P, D]`` on the GPU inside a canary-filled buffer, plus its shadow."""

    def __init__(self, rng, num_pages, page_size, d, dtype, pad):
        es = torch.tensor([], dtype=dtype).element_size()
        stride = page_size * d + pad
        front = RED // es
        body = num_pages * stride
        total = front + body + RED // es
        init = rng.randbytes(body * es)
        raw = bytearray([CANARY]) * (total * es)
        raw[front * es:front * es + len(init)] = init
        self.buf = torch.frombuffer(raw, dtype=torch.uint8).to("cuda").view(dtype)
        self.cache = self.buf.as_strided((num_pages, page_size, d), (stride, d, 1), front)
        self.shadow = store_oracle.ShadowStore(page_size, d * es, num_pages, init,
                                               page_stride_bytes=stride * es)
        self.lo, self.hi = front * es, front * es + len(init)

    def check(self):
        raw = bytes(self.buf.view(torch.uint8).cpu().numpy())
        assert raw[:self.lo] == bytes([CANARY]) * self.lo, "redzone before the cache was written"
        assert raw[self.hi:] == bytes([CANARY]) * (len(raw) - self.hi), "redzone after was written"
        bad = self.shadow.mismatches(raw[self.lo:self.hi])
        assert bad == [], f"cache differs from the shadow store at {bad[:10]} (of {len(bad)})"


def _rows(rng, n, d, dtype):
    es = torch.tensor([], dtype=dtype).element_size()
    data = rng.randbytes(n * d * es)
    if n == 0:
        return torch.empty(0, d, dtype=dtype, device="cuda"), []
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).to("cuda").view(dtype).view(n, d)
    rb = d * es
    return t, [data[i * rb:(i + 1) * rb] for i in range(n)]


def _mapping_and_locs(rng, n, page_size, swa_slots):
    """Injective mapping over ``n`` distinct full locations (some in negative form); full slot 0
    stays unmapped (``M[0] == 0``), so a zero location always lands in the dummy page."""
    length = max(n, 1) * 2 + page_size + 1
    mapping = [0] * (length - 1) + [-1]
    real = rng.sample(range(page_size, swa_slots), min(swa_slots - page_size, n))
    for f, s in zip(rng.sample(range(1, length - 1), len(real)), real):
        if rng.random() < 0.9:
            mapping[f] = s
    idx = rng.sample(range(length - 1), n)
    loc = [i - length if rng.random() < 0.1 else i for i in idx]
    return mapping, loc


@pytest.mark.parametrize("impl", GPU_IMPLS)
@pytest.mark.parametrize("n", [0, 1, 1023, 1025, 100000])
def test_translate(impl, n):
    k = kernels.get_impl(impl)
    rng = random.Random(n)
    length = 4096 + 256 + 1
    mapping = [rng.choice([0, 2**31 - 1, rng.randrange(256, 10**6)]) for _ in range(length - 1)]
    mapping.append(-1)
    loc = [rng.choice([-1, -2, 0, rng.randrange(-length, length)]) for _ in range(n)]
    expected = translation_oracle.translate(mapping, loc)
    m_t = torch.tensor(mapping, dtype=torch.int64, device="cuda")
    loc_t = torch.tensor(loc, dtype=torch.int64, device="cuda")
    out = torch.full((n,), 7, dtype=torch.int32, device="cuda")
    assert k.translate(m_t, loc_t, out=out) is out
    assert out.tolist() == expected
    assert k.translate(m_t, loc_t).tolist() == expected


@pytest.mark.parametrize("impl", GPU_IMPLS)
@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
def test_store(impl, shape):
    page_size, d, dtype, n, num_pages, pad = shape
    k = kernels.get_impl(impl)
    rng = random.Random(str(shape))
    pool = Pool(rng, num_pages, page_size, d, dtype, pad)
    slots = num_pages * page_size
    real = min(n, slots - page_size)
    locs = rng.sample(range(page_size, slots), real) + [rng.randrange(page_size)
                                                        for _ in range(n - real)]
    rng.shuffle(locs)
    rows, row_bytes = _rows(rng, n, d, dtype)
    pool.shadow.store(zip(locs, row_bytes))
    k.store(pool.cache, torch.tensor(locs, dtype=torch.int32, device="cuda"), rows)
    torch.cuda.synchronize()
    pool.check()


@pytest.mark.parametrize("impl", GPU_IMPLS)
@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
def test_translate_store(impl, shape):
    page_size, d, dtype, n, num_pages, pad = shape
    k = kernels.get_impl(impl)
    rng = random.Random("ts" + str(shape))
    pool = Pool(rng, num_pages, page_size, d, dtype, pad)
    mapping, loc = _mapping_and_locs(rng, n, page_size, num_pages * page_size)
    swa = translation_oracle.translate(mapping, loc)
    rows, row_bytes = _rows(rng, n, d, dtype)
    pool.shadow.store(zip(swa, row_bytes))
    out = k.translate_store(torch.tensor(mapping, dtype=torch.int64, device="cuda"),
                            torch.tensor(loc, dtype=torch.int64, device="cuda"), rows, pool.cache)
    assert out.dtype == torch.int32 and out.tolist() == swa
    pool.check()


@pytest.mark.parametrize("impl", GPU_IMPLS)
def test_translate_store_in_cuda_graph(impl):
    """Capture once on static buffers, replay with new locations and rows copied in."""
    k = kernels.get_impl(impl)
    rng = random.Random("graph")
    page_size, d, dtype, n, num_pages = 16, 576, torch.bfloat16, 64, 40
    pool = Pool(rng, num_pages, page_size, d, dtype, 0)
    mapping, loc = _mapping_and_locs(rng, n, page_size, num_pages * page_size)
    m_t = torch.tensor(mapping, dtype=torch.int64, device="cuda")
    loc_t = torch.zeros(n, dtype=torch.int64, device="cuda")  # full slot 0 -> dummy page
    rows_t = torch.zeros(n, d, dtype=dtype, device="cuda")
    out = torch.empty(n, dtype=torch.int32, device="cuda")
    snapshot = pool.buf.clone()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        k.translate_store(m_t, loc_t, rows_t, pool.cache, out=out)  # warm-up (compiles)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k.translate_store(m_t, loc_t, rows_t, pool.cache, out=out)
    pool.buf.copy_(snapshot)  # undo the warm-up's dummy-page writes

    for rep in range(2):
        mapping_rep, loc_rep = (mapping, loc) if rep == 0 else _mapping_and_locs(
            rng, n, page_size, num_pages * page_size)
        if rep:
            m_t.copy_(torch.tensor(mapping_rep, dtype=torch.int64))
        rows, row_bytes = _rows(rng, n, d, dtype)
        loc_t.copy_(torch.tensor(loc_rep, dtype=torch.int64))
        rows_t.copy_(rows)
        graph.replay()
        torch.cuda.synchronize()
        swa = translation_oracle.translate(mapping_rep, loc_rep)
        pool.shadow.store(zip(swa, row_bytes))
        assert out.tolist() == swa
        pool.check()


def test_cuda_impl_refuses_cpu_tensors():
    k = kernels.get_impl("cuda")
    with pytest.raises(ContractError, match="must be a CUDA tensor"):
        k.translate(torch.tensor([0, -1]), torch.tensor([0]))


@pytest.mark.parametrize("impl", ["triton", "cuda"])
def test_value_contract_on_gpu(impl):
    k = kernels.get_impl(impl)
    cache = torch.zeros(2, 4, 8, dtype=torch.uint8, device="cuda")
    with pytest.raises(ContractError, match="no negative write location"):
        k.store(cache, torch.tensor([5, -1], dtype=torch.int32, device="cuda"),
                torch.zeros(2, 8, dtype=torch.uint8, device="cuda"))
    assert int(cache.sum()) == 0
