"""Contract tests: every bad input to a kernel gets a ContractError naming the argument and rule.

What is tested
    For each implementation usable on CPU (``torch``; ``triton`` through the interpreter): static
    contracts (dtypes, rank, contiguity, count of locations vs rows, page size a power of two,
    ``out`` dtype/shape) and value contracts (negative write location, write outside the cache,
    location outside the mapping, id >= 2^31, two rows on one slot outside the dummy page 0).
    Also: nothing is written when a contract fails; duplicates inside page 0 are allowed; value
    checks are skipped (but static checks are not) while a launch recorder is installed, and the
    recorded ``validate`` closure raises the same error when run later.

How it is verified
    ``pytest.raises(ContractError, match=...)`` on the argument name and a phrase of the rule;
    the cache bytes are compared before/after. Fixed inputs, no randomness.

How to reproduce
    ``/tmp/venv/bin/pytest tests/kernels/test_contracts.py -q``

How to extend
    Add a ``(name, call, pattern)`` row to ``BAD_CALLS`` (a callable taking the impl module) for a
    new rule. CPU time: ~2 s.
"""

from __future__ import annotations

import pytest
import torch

from swafuzz import kernels
from swafuzz.kernels import contracts
from swafuzz.kernels.contracts import ContractError
from swafuzz.kernels.launch import recording

IMPLS_HERE = [
    n for n in kernels.available_impls()
    if n != "cuda" and not (n == "triton" and torch.cuda.is_available())
]

P, D = 4, 3
I32, I64 = torch.int32, torch.int64


def _cache(num_pages: int = 3, dtype: torch.dtype = torch.uint8) -> torch.Tensor:
    return torch.arange(num_pages * P * D, dtype=torch.int32).to(dtype).view(num_pages, P, D)


def _rows(n: int, dtype: torch.dtype = torch.uint8) -> torch.Tensor:
    return torch.full((n, D), 200, dtype=dtype)


def _mapping(values=(0, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, -1)) -> torch.Tensor:
    return torch.tensor(values, dtype=I64)


def _loc32(values) -> torch.Tensor:
    return torch.tensor(values, dtype=I32)


def _loc64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=I64)


# (id, call(k), regex the message must match). Every message must name the argument.
BAD_CALLS = [
    ("store-int64-loc",
     lambda k: k.store(_cache(), _loc64([4]), _rows(1)),
     r"^store: loc must be int32 \(got torch.int64\); int64 locations are refused"),
    ("store-count-mismatch",
     lambda k: k.store(_cache(), _loc32([4, 5]), _rows(3)),
     r"store: rows.shape\[0\] must equal loc.numel\(\): location count equals row count"),
    ("store-loc-not-contiguous",
     lambda k: k.store(_cache(), _loc32([4, 9, 5, 9])[::2], _rows(2)),
     r"store: loc must be contiguous"),
    ("store-rows-not-contiguous",
     lambda k: k.store(_cache(), _loc32([4, 5]), _rows(2).t().contiguous().t()),
     r"store: rows must be contiguous"),
    ("store-loc-2d",
     lambda k: k.store(_cache(), _loc32([[4, 5]]), _rows(2)),
     r"store: loc must be 1-D"),
    ("store-page-size-not-power-of-two",
     lambda k: k.store(torch.zeros(2, 3, D, dtype=torch.uint8), _loc32([3]), _rows(1)),
     r"store: cache page size P = cache.shape\[1\] must be a power of two"),
    ("store-cache-dtype",
     lambda k: k.store(_cache(dtype=torch.float32), _loc32([4]), _rows(1, torch.float32)),
     r"store: cache dtype must be bfloat16 or uint8"),
    ("store-rows-dtype",
     lambda k: k.store(_cache(), _loc32([4]), _rows(1, torch.bfloat16)),
     r"store: rows dtype must equal cache dtype"),
    ("store-rows-width",
     lambda k: k.store(_cache(), _loc32([4]), torch.zeros(1, D + 1, dtype=torch.uint8)),
     r"store: rows.shape\[1\] must equal cache row width"),
    ("store-cache-row-stride",
     lambda k: k.store(torch.zeros(3, P, 2 * D, dtype=torch.uint8)[:, :, :D], _loc32([4]),
                       _rows(1)),
     r"store: cache row stride must equal D"),
    ("store-negative-loc",
     lambda k: k.store(_cache(), _loc32([4, -1]), _rows(2)),
     r"store: loc\[1\] = -1: no negative write location"),
    ("store-out-of-range",
     lambda k: k.store(_cache(), _loc32([4, 12]), _rows(2)),
     r"store: loc\[1\] = 12 is outside the cache: every write location must be < num_pages \* P"),
    ("store-duplicate-target",
     lambda k: k.store(_cache(), _loc32([4, 9, 6, 9]), _rows(4)),
     r"store: loc\[1\] and loc\[3\] both write slot 9: two rows may share a target only inside "
     r"the dummy page 0"),
    ("translate-int32-loc",
     lambda k: k.translate(_mapping(), _loc32([1])),
     r"translate: loc must be int64"),
    ("translate-int32-mapping",
     lambda k: k.translate(_mapping().to(I32), _loc64([1])),
     r"translate: mapping must be int64"),
    ("translate-loc-out-of-range",
     lambda k: k.translate(_mapping(), _loc64([1, 13])),
     r"translate: loc\[1\] = 13 is outside the mapping: every full location must lie in "
     r"\[-13, 13\)"),
    ("translate-loc-below-wrap",
     lambda k: k.translate(_mapping(), _loc64([-14])),
     r"translate: loc\[0\] = -14 is outside the mapping"),
    ("translate-id-too-large",
     lambda k: k.translate(_mapping((0, 2**31, -1)), _loc64([0, 1])),
     r"translate: mapping\[loc\[1\] = 1\] = 2147483648 does not fit int32: translated ids must "
     r"be below 2\^31"),
    ("translate-out-dtype",
     lambda k: k.translate(_mapping(), _loc64([1]), out=torch.empty(1, dtype=I64)),
     r"translate: out must be int32 \(got torch.int64\)"),
    ("translate-out-shape",
     lambda k: k.translate(_mapping(), _loc64([1]), out=torch.empty(2, dtype=I32)),
     r"translate: out must have shape \(1,\)"),
    ("translate-out-not-contiguous",
     lambda k: k.translate(_mapping(), _loc64([1, 2]), out=torch.empty(4, dtype=I32)[::2]),
     r"translate: out must be contiguous"),
    ("translate_store-sentinel-is-negative-write",
     lambda k: k.translate_store(_mapping(), _loc64([1, -1]), _rows(2), _cache()),
     r"translate_store: mapping\[loc\]\[1\] = -1: no negative write location"),
    ("translate_store-int32-loc",
     lambda k: k.translate_store(_mapping(), _loc32([1]), _rows(1), _cache()),
     r"translate_store: loc must be int64"),
    ("translate_store-count-mismatch",
     lambda k: k.translate_store(_mapping(), _loc64([1, 2]), _rows(1), _cache()),
     r"translate_store: rows.shape\[0\] must equal loc.numel\(\): location count equals row "
     r"count"),
    ("translate_store-duplicate-target",
     lambda k: k.translate_store(_mapping((0, 4, 4, 0, 0, 0, 0, 0, -1)), _loc64([1, 2]),
                                 _rows(2), _cache()),
     r"translate_store: mapping\[loc\]\[0\] and mapping\[loc\]\[1\] both write slot 4"),
    ("translate_store-outside-cache",
     lambda k: k.translate_store(_mapping((0, 12, -1)), _loc64([1]), _rows(1), _cache()),
     r"translate_store: mapping\[loc\]\[0\] = 12 is outside the cache"),
    ("translate_store-out-dtype",
     lambda k: k.translate_store(_mapping(), _loc64([1]), _rows(1), _cache(),
                                 out=torch.empty(1, dtype=torch.float32)),
     r"translate_store: out must be int32"),
]


@pytest.mark.parametrize("impl", IMPLS_HERE)
@pytest.mark.parametrize("call,pattern", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_contract_error(impl, call, pattern):
    k = kernels.get_impl(impl)
    with pytest.raises(ContractError, match=pattern):
        call(k)


def test_contract_error_is_value_error():
    assert issubclass(ContractError, ValueError)


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_failed_contract_writes_nothing(impl):
    k = kernels.get_impl(impl)
    cache = _cache()
    before = cache.clone()
    with pytest.raises(ContractError):
        k.store(cache, _loc32([4, 5, -3]), _rows(3))
    with pytest.raises(ContractError):
        k.translate_store(_mapping(), _loc64([1, 2, -1]), _rows(3), cache)
    assert torch.equal(cache, before)


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_duplicates_inside_dummy_page_are_allowed(impl):
    k = kernels.get_impl(impl)
    cache = _cache()
    k.store(cache, _loc32([0, 0, 3, 0, 4]), _rows(5))
    assert cache[1, 0].tolist() == [200] * D
    out = k.translate_store(_mapping(), _loc64([0, 5, 6, 1]), _rows(4), cache)
    assert out.tolist() == [0, 0, 0, 4]


def test_page_size_bounds():
    assert contracts.log2_page_size("t", 1) == 0
    assert contracts.log2_page_size("t", 256) == 8
    for bad in (0, 3, 6, 2**21):
        with pytest.raises(ContractError, match="power of two"):
            contracts.log2_page_size("t", bad)


class _CallThrough:
    """A minimal launch recorder: runs every launch, keeps its validate closure for later."""

    def __init__(self) -> None:
        self.launches: list[tuple[str, object]] = []

    def on_launch(self, name, fn, args, validate):
        self.launches.append((name, validate))
        fn(*args)


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_value_checks_skipped_while_recording(impl):
    """Under a recorder (capture) value checks are deferred; static checks still raise."""
    k = kernels.get_impl(impl)
    cache = _cache()
    rec = _CallThrough()
    with recording(rec):
        # Duplicate real target: a value violation that is memory-safe for the interpreter.
        k.store(cache, _loc32([4, 4]), _rows(2))
        with pytest.raises(ContractError, match="loc must be int32"):
            k.store(cache, _loc64([4]), _rows(1))
    assert cache[1, 0].tolist() == [200] * D  # the launch ran
    if impl == "torch":
        assert rec.launches == []  # aten ops: recorded by the tape's dispatch mode, not here
    else:
        assert [name for name, _ in rec.launches] == [f"{impl}.store"]
        validate = rec.launches[0][1]
        with pytest.raises(ContractError, match="both write slot 4"):
            validate()


@pytest.mark.parametrize("impl", IMPLS_HERE)
def test_store_unchecked_skips_only_the_value_contract(impl):
    k = kernels.get_impl(impl)
    cache = _cache()
    k.store_unchecked(cache, _loc32([4, 4]), _rows(2))  # duplicate real target: accepted
    assert cache[1, 0].tolist() == [200] * D
    with pytest.raises(ContractError, match="loc must be int32"):
        k.store_unchecked(cache, _loc64([4]), _rows(1))
