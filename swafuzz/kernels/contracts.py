"""The int32 contracts of translate / store / translate_store, checked before any launch by
every implementation (``torch_impl``, ``triton_impl``, ``cuda_impl``).

* **static** (``check_*_static``): dtype, rank, shape, contiguity, page size, device; metadata
  only, so they always run, graph capture included.
* **value** (``*_values_validator``): no negative write location, every index in its buffer,
  ids below 2^31, no two rows writing one slot outside dummy page 0. They sync the host, so they
  are ``validate=`` closures for :func:`kernels.launch.launch`, skipped during capture.

A failure raises :class:`ContractError` naming operation, argument and rule. Shapes (``N`` rows,
``D`` elements per row, ``P`` page size): ``mapping`` int64 ``[S_full + P + 1]``, 1-D,
contiguous (``mapping[-1] == -1`` is an engine invariant, unchecked); ``loc`` 1-D contiguous,
int64 ``[N]`` for translate / translate_store, int32 ``[N]`` for store; ``cache``
``[num_pages, P, D]`` bfloat16 or uint8, inner stride 1, row stride ``D``, page stride
``>= P * D``; ``rows`` ``[N, D]`` of the cache's dtype, contiguous; ``out`` int32 ``[N]``,
contiguous.
"""

from __future__ import annotations

from typing import Callable

import torch

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
#: Largest page size accepted (a power of two); far above any real pool (DSV4 uses 256).
MAX_PAGE_SIZE = 2**20
#: Row dtypes a cache may have. bfloat16 rows are moved as their 16-bit patterns.
CACHE_DTYPES = (torch.bfloat16, torch.uint8)


class ContractError(ValueError):
    """A launch contract was violated; the message names the argument and the rule."""


def _fail(op: str, msg: str) -> None:
    raise ContractError(f"{op}: {msg}")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _require_tensor(op: str, name: str, t: object) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        _fail(op, f"{name} must be a torch.Tensor (got {type(t).__name__})")
    return t  # type: ignore[return-value]


def _require_1d_contiguous(op: str, name: str, t: torch.Tensor) -> None:
    if t.dim() != 1:
        _fail(op, f"{name} must be 1-D (got shape {tuple(t.shape)})")
    if t.numel() > 1 and t.stride(0) != 1:
        _fail(op, f"{name} must be contiguous (got stride {t.stride()})")


def _require_same_device(op: str, named: dict[str, torch.Tensor]) -> None:
    devices = {name: t.device for name, t in named.items()}
    first_name, first = next(iter(devices.items()))
    for name, dev in devices.items():
        if dev != first:
            _fail(op, f"{name} must be on the same device as {first_name} (got {dev} vs {first})")


def log2_page_size(op: str, page_size: int) -> int:
    """``log2(page_size)``; raises unless ``page_size`` is a power of two in ``1..2^20``."""
    if page_size < 1 or page_size > MAX_PAGE_SIZE or page_size & (page_size - 1):
        _fail(op, f"cache page size P = cache.shape[1] must be a power of two in "
                  f"1..{MAX_PAGE_SIZE} (got {page_size})")
    return page_size.bit_length() - 1


# -- static checks ----------------------------------------------------------------------------------


def int32_out(loc: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """``out``, or a new int32 tensor with one entry per location of ``loc``, on its device."""
    return torch.empty(loc.numel(), dtype=torch.int32, device=loc.device) if out is None else out


def check_out_static(op: str, out: torch.Tensor | None, n: int, device: torch.device) -> None:
    """``out`` (optional): int32 ``[n]``, contiguous, on ``device``."""
    if out is None:
        return
    _require_tensor(op, "out", out)
    if out.dtype != torch.int32:
        _fail(op, f"out must be int32 (got {out.dtype})")
    if tuple(out.shape) != (n,):
        _fail(op, f"out must have shape ({n},), one entry per location (got {tuple(out.shape)})")
    if n > 1 and out.stride(0) != 1:
        _fail(op, f"out must be contiguous (got stride {out.stride()})")
    if out.device != device:
        _fail(op, f"out must be on the same device as loc (got {out.device} vs {device})")


def check_translate_static(mapping: torch.Tensor, loc: torch.Tensor,
                           out: torch.Tensor | None = None, *, op: str = "translate") -> None:
    """mapping: int64 ``[M]`` 1-D contiguous, ``M >= 1``; loc: int64 ``[N]`` 1-D contiguous;
    out: optional int32 ``[N]``; all on one device."""
    _require_tensor(op, "mapping", mapping)
    _require_tensor(op, "loc", loc)
    if mapping.dtype != torch.int64:
        _fail(op, f"mapping must be int64 (got {mapping.dtype})")
    _require_1d_contiguous(op, "mapping", mapping)
    if mapping.numel() < 1:
        _fail(op, "mapping must not be empty (it holds at least the -1 sentinel)")
    if loc.dtype != torch.int64:
        _fail(op, f"loc must be int64 full locations (got {loc.dtype})")
    _require_1d_contiguous(op, "loc", loc)
    _require_same_device(op, {"mapping": mapping, "loc": loc})
    check_out_static(op, out, loc.numel(), loc.device)


def check_store_static(cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, *,
                       op: str = "store", loc_dtype: torch.dtype = torch.int32) -> int:
    """Static contract of a store (shapes: module docstring; ``loc_dtype`` int32 for store);
    returns ``log2(P)``."""
    _require_tensor(op, "cache", cache)
    _require_tensor(op, "loc", loc)
    _require_tensor(op, "rows", rows)
    if loc.dtype != loc_dtype:
        rule = f"loc must be {_dtype_name(loc_dtype)} (got {loc.dtype})"
        if loc_dtype == torch.int32 and loc.dtype == torch.int64:
            rule += "; int64 locations are refused, never reinterpreted"
        _fail(op, rule)
    _require_1d_contiguous(op, "loc", loc)
    if cache.dim() != 3:
        _fail(op, f"cache must be 3-D [num_pages, P, D] (got shape {tuple(cache.shape)})")
    if cache.dtype not in CACHE_DTYPES:
        _fail(op, f"cache dtype must be bfloat16 or uint8 (got {cache.dtype})")
    num_pages, page_size, d = cache.shape
    log2p = log2_page_size(op, page_size)
    if d < 1:
        _fail(op, f"cache row width D = cache.shape[2] must be >= 1 (got {d})")
    if cache.stride(2) != 1 and d > 1:
        _fail(op, f"cache inner stride must be 1 (got strides {cache.stride()})")
    if cache.stride(1) != d and page_size > 1:
        _fail(op, f"cache row stride must equal D = {d} (got strides {cache.stride()})")
    if cache.stride(0) < page_size * d and num_pages > 1:
        _fail(op, f"cache page stride must be >= P*D = {page_size * d} (got strides "
                  f"{cache.stride()})")
    if rows.dtype != cache.dtype:
        _fail(op, f"rows dtype must equal cache dtype {cache.dtype} (got {rows.dtype})")
    if rows.dim() != 2:
        _fail(op, f"rows must be 2-D [N, D] (got shape {tuple(rows.shape)})")
    n = loc.numel()
    if rows.shape[0] != n:
        _fail(op, f"rows.shape[0] must equal loc.numel(): location count equals row count "
                  f"(got {rows.shape[0]} rows, {n} locations)")
    if rows.shape[1] != d:
        _fail(op, f"rows.shape[1] must equal cache row width D = {d} (got {rows.shape[1]})")
    if not rows.is_contiguous():
        _fail(op, f"rows must be contiguous (got strides {rows.stride()})")
    _require_same_device(op, {"cache": cache, "loc": loc, "rows": rows})
    return log2p


def check_translate_store_static(mapping: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor,
                                 cache: torch.Tensor, out: torch.Tensor | None = None, *,
                                 op: str = "translate_store") -> int:
    """Static contract of the fused path (int64 full ``loc``); returns ``log2(P)``."""
    check_translate_static(mapping, loc, out, op=op)
    log2p = check_store_static(cache, loc, rows, op=op, loc_dtype=torch.int64)
    _require_same_device(op, {"mapping": mapping, "cache": cache})
    return log2p


# -- value checks (host sync; run through launch(validate=...)) -------------------------------------


def _first(mask: torch.Tensor) -> int:
    return int(torch.nonzero(mask)[0, 0].item())


def _refuse_any(op: str, mask: torch.Tensor, message: Callable[[int], str]) -> None:
    """Fail with ``message(i)`` for the first ``i`` where ``mask`` holds (host sync)."""
    if bool(mask.any()):
        _fail(op, message(_first(mask)))


def check_translate_values(mapping: torch.Tensor, loc: torch.Tensor, *,
                           op: str = "translate") -> torch.Tensor | None:
    """Every loc in ``[-len(mapping), len(mapping))``, every translated value fits int32;
    returns the translated values (int64 ``[N]``, same device), None when ``N == 0``."""
    if loc.numel() == 0:
        return None
    m = mapping.numel()
    _refuse_any(op, (loc < -m) | (loc >= m), lambda i: (
        f"loc[{i}] = {int(loc[i])} is outside the mapping: every full location must lie in "
        f"[-{m}, {m}) (len(mapping) = {m})"))
    vals = mapping[loc]
    _refuse_any(op, (vals < INT32_MIN) | (vals > INT32_MAX), lambda i: (
        f"mapping[loc[{i}] = {int(loc[i])}] = {int(vals[i])} does not fit int32: translated "
        "ids must be below 2^31"))
    return vals


def check_store_values(cache: torch.Tensor, loc: torch.Tensor, *, op: str = "store",
                       loc_name: str = "loc") -> None:
    """Store locations (any integer dtype ``[N]``): ``0 <= loc < num_pages * P`` (and < 2^31);
    no two locations equal unless inside the dummy page 0 (``loc < P``)."""
    if loc.numel() == 0:
        return
    num_pages, page_size, _ = cache.shape
    slots = num_pages * page_size
    _refuse_any(op, loc < 0, lambda i: (
        f"{loc_name}[{i}] = {int(loc[i])}: no negative write location (it would write before "
        "the cache buffer)"))
    _refuse_any(op, loc > INT32_MAX,
                lambda i: f"{loc_name}[{i}] = {int(loc[i])}: write ids must be below 2^31")
    _refuse_any(op, loc >= slots, lambda i: (
        f"{loc_name}[{i}] = {int(loc[i])} is outside the cache: every write location must be "
        f"< num_pages * P = {slots}"))
    real = loc >= page_size
    idx = torch.nonzero(real).flatten()
    if idx.numel() < 2:
        return
    vals = loc[idx]
    svals, order = torch.sort(vals, stable=True)
    dup = svals[1:] == svals[:-1]
    if bool(dup.any()):
        j = _first(dup)
        a, b = int(idx[order[j]]), int(idx[order[j + 1]])
        _fail(op, f"{loc_name}[{a}] and {loc_name}[{b}] both write slot {int(svals[j])}: two "
                  f"rows may share a target only inside the dummy page 0 (slots < P = "
                  f"{page_size}); the kernel gives no order among rows")


def translate_values_validator(mapping: torch.Tensor, loc: torch.Tensor, *,
                               op: str = "translate") -> Callable[[], None]:
    """The value contract of translate as a closure for ``launch(validate=...)``."""
    return lambda: check_translate_values(mapping, loc, op=op)


def store_values_validator(cache: torch.Tensor, loc: torch.Tensor, *,
                           op: str = "store") -> Callable[[], None]:
    """The value contract of store as a closure for ``launch(validate=...)``."""
    return lambda: check_store_values(cache, loc, op=op)


def translate_store_values_validator(mapping: torch.Tensor, loc: torch.Tensor,
                                     cache: torch.Tensor, *, op: str = "translate_store"
                                     ) -> Callable[[], None]:
    """Translate contract on ``loc``, then the store contract on the translated locations."""

    def validate() -> None:
        vals = check_translate_values(mapping, loc, op=op)
        if vals is not None:
            check_store_values(cache, vals, op=op, loc_name="mapping[loc]")

    return validate
