"""The real DSV4 SWA cache layout (``pool.layout = "dsv4"``, issue 9 item 4, spec §4.6).

CPU gate: the Case field and its CaseErrors; the pool's page geometry and canaries; the unified
model's torch store equals the plain-Python reference quantizer (``features/dsv4_layout/oracle.py``) bit
for bit on hypothesis rows, at the layout's byte addresses; a Case runs clean under every check;
the three layout mutants are killed on ``dsv4_layout`` Cases and are the unified engine on every
other kind. Upstream (marker ``upstream``, an sglang venv): the release's own Triton V4 store
(``targets/sglang/store.py``, interpreter) equals the reference quantizer bit for bit on
hypothesis rows, and the ``sglang`` target runs a layout Case clean.

Reproduce: ``pytest tests/features/dsv4_layout/test_dsv4_layout.py`` (and with an sglang venv's python for
the upstream part).
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swafuzz.features.dsv4_layout import oracle as q
from swafuzz.features.validation import load_case
from swafuzz.harness.pipeline.execute import execute
from swafuzz.kernels import dsv4_store
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import POISON_BYTE, Case, CaseError, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.payload import dsv4_rows_bytes
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.kv_pool import canary_bytes

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")
NP = 10  # SWA pages of the test pools, dummy page included
LAYOUT_MUTANTS = ("dsv4_token_contiguous", "dsv4_rope_quantized", "dsv4_dense_page_stride")


def _pool(p: int, **kw) -> PoolConfig:
    base = dict(page_size=p, full_pages=10, swa_pages=NP - 1, window=2 * p, layers=1,
                draft_layers=1, row_width=512, row_dtype="bfloat16", layout="dsv4")
    base.update(kw)
    return PoolConfig(**base)


def _case(p: int = 2, **kw) -> Case:
    return Case(pool=_pool(p, **kw), kind="dsv4_layout", payload_seed=7,
                graph=GraphConfig(buckets=(1, 2), topk=1, num_draft_tokens=2),
                steps=(Step("admit", rid=0, length=p + 1), Step("admit", rid=1, length=1),
                       Step("decode", rids=(0, 1), exec="graph"),
                       Step("verify", rids=(1,), exec="eager"),
                       Step("draft_extend", rids=(1, 0), accept=(2, 1), exec="graph"),
                       Step("evict", rid=0), Step("finish", rid=1),
                       Step("admit", rid=2, length=2), Step("decode", rids=(2,), exec="graph")))


# ----------------------------------------------------------------------------- the Case field
def test_case_field_round_trip_and_errors():
    c = _case()
    assert Case.loads(c.dumps()) == c
    assert c.to_json()["pool"]["layout"] == "dsv4"
    assert "layout" not in Case(pool=PoolConfig()).to_json()["pool"]
    assert c.pool.row_bytes == 584 and c.pool.k_row_bytes == 1024
    assert c.pool.page_stride_bytes == 1728 and c.pool.pad_bytes_per_page == 1728 - 2 * 584
    for field, value, match in (("layout", "v41", r"pool\.layout: must be one of rows, dsv4"),
                                ("row_width", 576, r"pool\.row_width: must be 512"),
                                ("row_dtype", "uint8", r"pool\.row_dtype: must be bfloat16"),
                                ("page_pad_bytes", 64, r"pool\.page_pad_bytes: must be absent")):
        bad = c.to_json()
        bad["pool"][field] = value
        with pytest.raises(CaseError, match=match):
            load_case(bad)


def test_payload_rows_are_finite_and_independent_of_the_row_count():
    a = dsv4_rows_bytes(3, 1, 0, "target", 0, 4)
    assert a[:2048] == dsv4_rows_bytes(3, 1, 0, "target", 0, 2)
    t = torch.frombuffer(bytearray(a), dtype=torch.bfloat16)
    assert t.numel() == 4 * 512 and bool(torch.isfinite(t).all())


# ----------------------------------------------------------------------------- pool and store
@pytest.mark.parametrize("p", [1, 2, 4])
def test_pool_geometry_and_canaries(p):
    eng = UnifiedEngine(_case(p), "torch")
    pool = eng.target_pool
    cache = pool.layer_cache(0)
    stride = q.page_stride(p)
    assert cache.dtype == torch.uint8 and tuple(cache.shape) == (NP, stride)
    assert pool.redzone(0)[3] == canary_bytes(stride - 584 * p) * NP
    assert pool.layer_bytes(0) == bytes([POISON_BYTE]) * (NP * p * 584)


def _store_both(p: int, rows_bits: list[list[int]], slots: list[int]):
    """Run the torch store on a fresh pool; return (pool bytes, expected slot bytes, pool)."""
    eng = UnifiedEngine(_case(p), "torch")
    pool = eng.target_pool
    rows = torch.tensor(rows_bits, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    pool.impl.store(pool.layer_cache(0), torch.tensor(slots, dtype=torch.int32), rows)
    exp = {s: q.quantize_token(r, POISON_BYTE) for s, r in zip(slots, rows_bits)}
    return pool.layer_bytes(0), exp, pool


_BF16 = st.integers(0, 0xFFFF).filter(lambda b: b & 0x7F80 != 0x7F80)  # finite bf16 bits
_ROW = st.lists(_BF16, min_size=512, max_size=512)


@settings(max_examples=25)
@given(st.sampled_from([1, 2, 4]), st.data())
def test_torch_store_equals_the_reference_quantizer(p, data):
    slots = data.draw(st.lists(st.integers(p, NP * p - 1), min_size=1, max_size=3, unique=True))
    rows = [data.draw(_ROW) for _ in slots]
    got, exp, pool = _store_both(p, rows, slots)
    for s in range(p, NP * p):
        want = exp.get(s, bytes([POISON_BYTE]) * 584)
        assert got[s * 584:(s + 1) * 584] == want, f"slot {s}"
    # and at the layout's addresses in the page: data row at offset*576, scales at 576P+offset*8
    pages = pool._pages(0)
    for s, tok in exp.items():
        page = bytes(pages[s // p].tolist())
        assert q.token_from_page_bytes(page, p, s % p) == tok
    assert pool.redzone(0)[3] == canary_bytes(q.page_stride(p) - 584 * p) * NP


def test_store_contract_errors():
    from swafuzz.kernels.contracts import ContractError

    eng = UnifiedEngine(_case(2), "torch")
    cache = eng.target_pool.layer_cache(0)
    rows = torch.zeros(1, 512, dtype=torch.bfloat16)
    with pytest.raises(ContractError, match="int32"):
        dsv4_store.store(cache, torch.tensor([3]), rows, 2)
    with pytest.raises(ContractError, match="negative"):
        dsv4_store.store(cache, torch.tensor([-1], dtype=torch.int32), rows, 2)
    with pytest.raises(ContractError, match=r"\[N, 512\]"):
        dsv4_store.store(cache, torch.tensor([3], dtype=torch.int32), rows[:, :448], 2)


@pytest.mark.parametrize("impl", ["torch", "triton"])
@pytest.mark.parametrize("p", [1, 2, 4])
def test_unified_passes_every_check(p, impl):
    v = execute(_case(p), "unified", impl, ["eager", "tape"])
    assert not v.failures, [f.message for f in v.failures]


def test_oracle_pool_bytes_are_quantized_tokens():
    c = _case(2)
    exp = expect(c)
    f = exp.forwards[0]  # admit of request 0: rows at targets
    buf = exp.steps[0].pools["target"][0]
    row0 = q.bf16_row(dsv4_rows_bytes(c.payload_seed, 0, 0, "target", 0, 1))
    t = f.targets[0]
    assert bytes(buf[t * 584:(t + 1) * 584]) == q.quantize_token(row0, POISON_BYTE)


# ----------------------------------------------------------------------------- mutants
@pytest.mark.parametrize("name", LAYOUT_MUTANTS)
def test_layout_mutant_killed_on_a_layout_case(name):
    v = execute(_case(2), f"mutant:{name}", "torch", ["eager", "tape"])
    assert v.failures and "pool_bytes" in {f.check for f in v.failures}
    if name == "dsv4_dense_page_stride":
        assert "redzones" in {f.check for f in v.failures}


def test_token_contiguous_is_the_correct_layout_at_page_size_1():
    assert not execute(_case(1), "mutant:dsv4_token_contiguous", "torch", ["eager"]).failures


@pytest.mark.parametrize("name", LAYOUT_MUTANTS)
def test_layout_mutants_are_unified_on_the_other_kinds(name):
    """Campaigns of the other scenario kinds do not find the layout mutants: a few cases of
    each (their pools are opaque-row pools, where the mutant's store is the unified one)."""
    from swafuzz import features
    from swafuzz.harness.pipeline.campaign import Campaign

    camp = Campaign(lambda case: execute(case, f"mutant:{name}", "torch", ["eager", "tape"]),
                    seed=0, shrink=False)
    for kind in features.default_kind_names():  # a resource-gated kind: GBs per Case
        if kind != "dsv4_layout":
            assert camp.run_kind(kind, 2).finding is None, kind


@pytest.mark.zoo
@pytest.mark.parametrize("name", LAYOUT_MUTANTS)
def test_zoo_kills_layout_mutant(name):
    """Each seed of the zoo's CI budget (60 cases of its kind, torch, eager + tape) kills the
    mutant, and its first failing check is ``pool_bytes`` (the page's bytes, not only the write
    set or the redzones). The full per-mutant zoo row (shrinking, ablation) is the zoo gate's,
    ``tests/harness/test_zoo_gate.py::test_zoo_ci_budget``, on the same inputs."""
    from swafuzz.harness.zoo.matrix import BUDGETS, first_kill

    for seed in range(BUDGETS["ci"][1]):
        verdict, cases = first_kill(name, seed=seed, impl="torch")
        assert verdict is not None, (name, seed, cases)
        assert verdict.failures[0].check == "pool_bytes", (seed, verdict.failures)


# ----------------------------------------------------------------------------- upstream
def _release_store_vs_oracle(p: int, rows_bits: list[list[int]], slots: list[int]) -> None:
    from swafuzz.targets.sglang.store import release_store

    stride = q.page_stride(p)
    cache = torch.full((8, stride), POISON_BYTE, dtype=torch.uint8)
    rows = torch.tensor(rows_bits, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    release_store(cache, torch.tensor(slots, dtype=torch.int32), rows, p)
    for s, r in zip(slots, rows_bits):
        page = bytes(cache[s // p].tolist())
        assert q.token_from_page_bytes(page, p, s % p) == q.quantize_token(r, POISON_BYTE), s
    written = {(s // p, s % p) for s in slots}
    for pg in range(8):  # every other byte untouched: other slots, scale pads, page pads
        page = bytes(cache[pg].tolist())
        for off in range(p):
            if (pg, off) not in written:
                assert q.token_from_page_bytes(page, p, off) == bytes([POISON_BYTE]) * 584
        assert page[584 * p:] == bytes([POISON_BYTE]) * (stride - 584 * p)


@pytest.mark.upstream
@needs_sglang
@settings(max_examples=12, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.data())
def test_release_triton_store_equals_the_reference_quantizer(p, data):
    slots = data.draw(st.lists(st.integers(0, 8 * p - 1), min_size=1, max_size=3, unique=True))
    rows = [data.draw(_ROW) for _ in slots]
    _release_store_vs_oracle(p, rows, slots)


@pytest.mark.upstream
@needs_sglang
def test_release_triton_store_on_payload_rows():
    """The payload's tile kinds (zero, tiny with bf16 subnormals, huge, ordinary) and fp8 ties."""
    raw = dsv4_rows_bytes(11, 0, 0, "target", 0, 4)
    rows = [q.bf16_row(raw[i * 1024:(i + 1) * 1024]) for i in range(4)]
    rows.append([0x4108] * 448 + [0] * 64)  # 8.5: an fp8 tie (to even: 8.0)
    _release_store_vs_oracle(2, rows, [2, 3, 5, 8, 13])


@pytest.mark.upstream
@needs_sglang
def test_interpreter_fp8_cast_needs_the_adapters_rounding():
    """Why ``targets/sglang/store.py`` replaces the interpreter's fp32 -> fp8e4nv cast: without
    it, SGLang's Triton store in the interpreter rounds 8.5 away from zero (9.0) where the
    hardware (and torch, and the reference) round to even (8.0)."""
    import contextlib

    import swafuzz.targets.sglang.store as st_mod

    rows = [[0x4108] * 448 + [0] * 64]  # 8.5 everywhere: scale 2**-4 -> 136 = tie of 128/144
    orig = st_mod.rne_fp8_interpreter
    try:
        st_mod.rne_fp8_interpreter = contextlib.nullcontext
        cache = torch.zeros(2, q.page_stride(1), dtype=torch.uint8)
        st_mod.release_store(cache, torch.tensor([1], dtype=torch.int32),
                             torch.tensor(rows, dtype=torch.int32).to(torch.int16).view(
                                 torch.bfloat16), 1)
    finally:
        st_mod.rne_fp8_interpreter = orig
    raw_codes = cache[1, :448].tolist()
    ref = q.quantize_token(rows[0], 0)
    if raw_codes == list(ref[:448]):
        pytest.skip("this Triton interpreter rounds fp8 to nearest even: the adapter's cast is "
                    "a no-op")
    assert set(raw_codes) == {ref[0] + 1}  # ties away from zero
    _release_store_vs_oracle(1, rows, [1])  # with the adapter's cast: equal


@pytest.mark.upstream
@needs_sglang
def test_sglang_target_passes_every_check_on_a_layout_case():
    v = execute(_case(2), "sglang", "torch", ["eager", "tape"])
    assert not v.failures, [f.message for f in v.failures]
