"""CUDA C++ twins of the Triton kernels, compiled at run time with NVRTC (GPU only).

Same signatures, shapes and dtypes as :mod:`kernels.torch_impl`. Each kernel is compiled with
``torch.cuda._compile_kernel`` (~1 s) on first use and cached; importing never touches CUDA
(calling on a CPU machine raises :class:`kernels.contracts.ContractError`).

* ``swafuzz_translate``: a thread per location, grid-stride; negative locations wrap by
  ``len(mapping)``; int64 cast to int32.
* ``swafuzz_store_<W>``: a warp-row per location (``threadIdx.y`` row, ``threadIdx.x`` walks
  ``W``-byte chunks, W in 16/8/4/2/1 from row width, page stride and alignment); raw bytes, so
  bf16 NaN payloads survive; ``page``/``offset`` in int32 as upstream; negative locations
  unguarded on device (the host contract refuses them before an eager launch).
* ``swafuzz_translate_store_<W>``: both in one launch; lane 0 writes the int32 SWA location.

Scalars are passed as C ``int``, so each is checked on the host to fit int32.
"""

from __future__ import annotations

import threading

import torch

from swafuzz.kernels import contracts
from swafuzz.kernels.launch import launch

_SOURCE = r"""
struct alignas(16) swz_v16 { unsigned int a, b, c, d; };
struct alignas(8) swz_v8 { unsigned int a, b; };
typedef unsigned int swz_v4;
typedef unsigned short swz_v2;
typedef unsigned char swz_v1;

extern "C" __global__ void swafuzz_translate(const long long* __restrict__ mapping,
                                             const long long* __restrict__ loc,
                                             int* __restrict__ out, int n, int m_len) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        long long full = loc[i];
        if (full < 0) full += m_len;
        out[i] = (int)mapping[full];
    }
}

// One row of `chunks` W-byte words to SWA slot `swa`: page/offset in int32, as upstream.
#define SWZ_STORE(W)                                                                           \
__device__ __forceinline__ void swz_copy_row_##W(swz_v##W* __restrict__ cache,                 \
                                                 const swz_v##W* __restrict__ rows,            \
                                                 long long r, int swa, int chunks,             \
                                                 int page_stride, int log2p) {                 \
    int page = swa >> log2p;                                                                   \
    int off = swa & ((1 << log2p) - 1);                                                        \
    swz_v##W* dst = cache + (long long)page * page_stride + (long long)off * chunks;           \
    const swz_v##W* src = rows + r * chunks;                                                   \
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) dst[c] = src[c];                    \
}                                                                                              \
extern "C" __global__ void swafuzz_store_##W(swz_v##W* __restrict__ cache,                    \
                                             const int* __restrict__ loc,                      \
                                             const swz_v##W* __restrict__ rows, int n,         \
                                             int chunks, int page_stride, int log2p) {         \
    long long rstride = (long long)gridDim.x * blockDim.y;                                     \
    for (long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y; r < n; r += rstride) \
        swz_copy_row_##W(cache, rows, r, loc[r], chunks, page_stride, log2p);                  \
}                                                                                              \
extern "C" __global__ void swafuzz_translate_store_##W(                                        \
        const long long* __restrict__ mapping, const long long* __restrict__ loc,             \
        int* __restrict__ out, swz_v##W* __restrict__ cache,                                   \
        const swz_v##W* __restrict__ rows, int n, int m_len, int chunks, int page_stride,      \
        int log2p) {                                                                           \
    long long rstride = (long long)gridDim.x * blockDim.y;                                     \
    for (long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y; r < n; r += rstride) { \
        long long full = loc[r];                                                               \
        if (full < 0) full += m_len;                                                           \
        int swa = (int)mapping[full];                                                          \
        if (threadIdx.x == 0) out[r] = swa;                                                    \
        swz_copy_row_##W(cache, rows, r, swa, chunks, page_stride, log2p);                     \
    }                                                                                          \
}

SWZ_STORE(16)
SWZ_STORE(8)
SWZ_STORE(4)
SWZ_STORE(2)
SWZ_STORE(1)
"""

_WIDTHS = (16, 8, 4, 2, 1)
_THREADS = 256  # translate: threads per block
_LANES, _ROWS = 32, 8  # store: block (lanes along the row, rows per block)
_MAX_BLOCKS = 1 << 20  # grid-stride loops above this

_kernels: dict[str, object] = {}
_lock = threading.Lock()


def _kernel(name: str):
    """The compiled kernel ``name`` (compiled once per process)."""
    k = _kernels.get(name)
    if k is None:
        with _lock:
            k = _kernels.get(name)
            if k is None:
                k = torch.cuda._compile_kernel(_SOURCE, name)
                _kernels[name] = k
    return k


def _require_cuda(op: str, named: dict[str, torch.Tensor]) -> None:
    for name, t in named.items():
        if t.device.type != "cuda":
            raise contracts.ContractError(
                f"{op}: {name} must be a CUDA tensor for the cuda implementation (got {t.device})")


def _require_int32(op: str, what: str, value: int) -> None:
    if value > contracts.INT32_MAX:
        raise contracts.ContractError(
            f"{op}: {what} = {value} must fit int32 for the cuda implementation")


def _width(cache: torch.Tensor, rows: torch.Tensor) -> int:
    """Largest chunk width (bytes) dividing the row bytes, page stride bytes and both bases."""
    es = cache.element_size()
    row_bytes = cache.shape[2] * es
    page_bytes = cache.stride(0) * es if cache.shape[0] > 1 else row_bytes
    for w in _WIDTHS:
        if (row_bytes % w == 0 and page_bytes % w == 0 and cache.data_ptr() % w == 0
                and rows.data_ptr() % w == 0):
            return w
    return 1


def _store_geometry(op: str, cache: torch.Tensor, rows: torch.Tensor, n: int):
    """(width, chunks per row, page stride in chunks, grid, block)."""
    w = _width(cache, rows)
    es = cache.element_size()
    chunks = cache.shape[2] * es // w
    page_stride = cache.stride(0) * es // w if cache.shape[0] > 1 else 0
    _require_int32(op, "page stride in chunks", page_stride)
    _require_int32(op, "N", n)
    grid = (min(-(-n // _ROWS), _MAX_BLOCKS), 1, 1)
    return w, chunks, page_stride, grid, (_LANES, _ROWS, 1)


def translate(mapping: torch.Tensor, loc: torch.Tensor, *,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """int32 ``[N]`` = ``int32(mapping[loc])``; see :mod:`kernels.torch_impl`."""
    op = "translate"
    contracts.check_translate_static(mapping, loc, out)
    _require_cuda(op, {"mapping": mapping, "loc": loc})
    n = loc.numel()
    _require_int32(op, "N", n)
    _require_int32(op, "len(mapping)", mapping.numel())
    out = contracts.int32_out(loc, out)
    if n == 0:
        return out
    grid = (min(-(-n // _THREADS), _MAX_BLOCKS), 1, 1)
    m_len = mapping.numel()

    def fn(mapping, loc, out):
        _kernel("swafuzz_translate")(grid=grid, block=(_THREADS, 1, 1),
                                     args=[mapping, loc, out, n, m_len])

    launch("cuda.translate", fn, (mapping, loc, out),
           contracts.translate_values_validator(mapping, loc))
    return out


def store(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, *,
          checked: bool = True) -> None:
    """Write ``rows[i]`` to slot ``loc[i]`` (int32) of ``cache``; see :mod:`kernels.torch_impl`
    (``checked=False``: :func:`store_unchecked`)."""
    op = "store"
    log2p = contracts.check_store_static(cache, loc, rows)
    _require_cuda(op, {"cache": cache, "loc": loc, "rows": rows})
    n = loc.numel()
    if n == 0:
        return
    w, chunks, page_stride, grid, block = _store_geometry(op, cache, rows, n)
    name = f"swafuzz_store_{w}"

    def fn(cache, loc, rows):
        _kernel(name)(grid=grid, block=block,
                      args=[cache, loc, rows, n, chunks, page_stride, log2p])

    launch("cuda.store", fn, (cache, loc, rows),
           contracts.store_values_validator(cache, loc) if checked else None)


def store_unchecked(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
    """:func:`store` with the static contract only: no value contract, ever (for mutants that
    reproduce a missing host check). Bad locations write outside the cache."""
    store(cache, loc, rows, checked=False)


def translate_store(mapping: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                    cache: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Translate int64 full ``loc`` and store ``rows`` there, in one launch; returns the int32
    SWA locations (``out`` when given)."""
    op = "translate_store"
    log2p = contracts.check_translate_store_static(mapping, loc, rows, cache, out)
    _require_cuda(op, {"mapping": mapping, "loc": loc, "rows": rows, "cache": cache})
    n = loc.numel()
    _require_int32(op, "len(mapping)", mapping.numel())
    out = contracts.int32_out(loc, out)
    if n == 0:
        return out
    w, chunks, page_stride, grid, block = _store_geometry(op, cache, rows, n)
    name = f"swafuzz_translate_store_{w}"
    m_len = mapping.numel()

    def fn(mapping, loc, out, cache, rows):
        _kernel(name)(grid=grid, block=block,
                      args=[mapping, loc, out, cache, rows, n, m_len, chunks, page_stride, log2p])

    launch("cuda.translate_store", fn, (mapping, loc, out, cache, rows),
           contracts.translate_store_values_validator(mapping, loc, cache))
    return out
