"""Directed tier: a SWA layer buffer beyond 2^31 bytes on CPU (issue 10, item 4).

One target layer of ``2051 pages * 256 rows * 4096 bytes`` (2051 MiB, past 2^31 = 2048 MiB; page
stride 1 MiB, plus the redzones) built by the target's own pool (``targets.kv_pool``), and a few
rows stored at slots whose byte address is below, at and past 2^31 by every CPU kernel path
(torch and the Triton interpreter; ``store`` and the fused ``translate_store``). Only the written
rows, their neighbours and the back redzone are read back, so the cost follows rows, not the
buffer size (the Triton interpreter included). An address computed in int32 (``page *
page_stride`` wrapping at 2^31) would land the far rows before the buffer or on other pages.

Marked ``bigmem`` (about 2.2 GB of RAM for a few seconds): skipped unless selected with
``pytest -m bigmem tests/features/big_layer/test_big_layer.py``; the CI gate does not run it.
"""

import pytest
import torch

from swafuzz import kernels
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.validate import MAX_POOL_BYTES
from swafuzz.targets.kv_pool import SWAKVPool, canary_bytes

P, D, PAGES = 256, 4096, 2050  # swa_pages + 1 = 2051 pages of 1 MiB
CFG = PoolConfig(page_size=P, full_pages=4, swa_pages=PAGES, window=4, row_width=D,
                 row_dtype="uint8")
# slots: page 1; the last row below 2^31; the first row at 2^31; the buffer's last row
SLOTS = [P, 2048 * P - 1, 2048 * P, (PAGES + 1) * P - 1]


def test_the_case_fits_the_resource_budget():
    """A Case asking for this pool (one target and one draft layer) is accepted."""
    layer = (PAGES + 1) * P * D
    assert layer > 2**31 and 2 * layer <= MAX_POOL_BYTES
    case = Case(pool=CFG, graph=GraphConfig(buckets=(1,)), steps=(Step("admit", rid=0, length=1),))
    assert Case.loads(case.dumps()) == case


@pytest.mark.bigmem
@pytest.mark.parametrize("impl_name", ["torch", "triton"])
@pytest.mark.parametrize("op", ["store", "translate_store"])
def test_rows_past_2_31_bytes_land_at_their_slots(impl_name, op):
    if impl_name not in kernels.available_impls():
        pytest.skip(f"{impl_name} not available here (Triton needs TRITON_INTERPRET=1 on CPU)")
    impl = kernels.get_impl(impl_name)
    pool = SWAKVPool("target", CFG, 1, 0, impl, "cpu")
    cache = pool.caches[0]
    assert pool.usable_bytes > 2**31 and cache.shape == (PAGES + 1, P, D)
    n = len(SLOTS)
    g = torch.Generator().manual_seed(10)
    rows = torch.randint(0, 256, (n, D), dtype=torch.uint8, generator=g)
    rows[rows == 0x5A] = 0x5B  # distinguishable from poison
    if op == "store":
        impl.store(cache, torch.tensor(SLOTS, dtype=torch.int32), rows)
    else:
        mapping = torch.zeros(CFG.mapping_len, dtype=torch.int64)
        mapping[-1] = -1
        full = torch.arange(P, P + n, dtype=torch.int64)
        mapping[full] = torch.tensor(SLOTS, dtype=torch.int64)
        out = impl.translate_store(mapping, full, rows, cache)
        assert out.tolist() == SLOTS
    for r, s in enumerate(SLOTS):
        page, off = divmod(s, P)
        assert torch.equal(cache[page, off], rows[r]), f"slot {s} (byte {s * D})"
        for nb in (s - 1, s + 1):  # the neighbouring rows keep their poison
            if 0 <= nb < (PAGES + 1) * P and nb not in SLOTS:
                assert bool((cache[nb // P, nb % P] == 0x5A).all()), f"row {nb} touched"
    rz, us = pool.redzone_bytes, pool.usable_bytes
    raw = pool.raw[0]
    assert raw[:rz].numpy().tobytes() == canary_bytes(rz)
    assert raw[rz + us:].numpy().tobytes() == canary_bytes(rz)
