"""The ring oracle (``features/ring/oracle.py``) and the ring Case fields, against hand-computed values
(features/ring/SEMANTICS.md, "Per-request SWA ring"; addendum §2.1, §5 R1-R5)."""

import pytest

from swafuzz.features.ring.oracle import ring_cost, ring_invariants, ring_row
from swafuzz.features.validation import load_case
from swafuzz.oracles.engine import AllocationRejected, CaseInfeasible, expect
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step


def ring_case(steps, **pool):
    kw = dict(page_size=2, full_pages=8, swa_pages=2, window=3, swa_ring=4, req_slots=2)
    kw.update(pool)
    return Case(pool=PoolConfig(**kw), graph=GraphConfig(buckets=(1, 2, 4), num_draft_tokens=2),
                steps=tuple(steps))


def test_json_omits_ring_fields_when_off_and_round_trips_when_on():
    off = Case(pool=PoolConfig())
    assert "swa_ring" not in off.dumps() and "req_slots" not in off.dumps()
    on = ring_case([Step("admit", rid=0, length=1)])
    back = Case.loads(on.dumps())
    assert back == on and back.pool.swa_ring == 4 and back.pool.req_slots == 2
    assert on.pool.swa_buffer_pages == 6 and on.pool.swa_slots == 12  # ring rows (2 + 1) * 4


@pytest.mark.parametrize("pool,field", [
    ({"swa_ring": 4}, "pool.req_slots"),
    ({"req_slots": 2}, "pool.swa_ring"),
    ({"swa_ring": 2, "req_slots": 1, "window": 3}, "pool.swa_ring"),
    ({"swa_ring": 3, "req_slots": 1, "window": 1, "page_size": 4}, "pool.swa_ring"),
])
def test_bad_ring_fields_name_the_field(pool, field):
    obj = Case(pool=PoolConfig()).to_json()
    obj["pool"].update(pool)
    with pytest.raises(CaseError) as e:
        load_case(obj)
    assert e.value.path == field


def test_ring_case_refuses_draft_decode_and_draft_extend_buffer():
    obj = ring_case([Step("admit", rid=0, length=1)]).to_json()
    obj["steps"].append({"op": "draft_decode", "rids": [0], "exec": "eager"})
    with pytest.raises(CaseError) as e:
        load_case(obj)
    assert e.value.path == "steps[1].op" and "allowed:" in str(e.value)
    obj = ring_case([]).to_json()
    obj["graph"]["draft_extend_buffer"] = True
    with pytest.raises(CaseError) as e:
        load_case(obj)
    assert e.value.path == "graph.draft_extend_buffer"


def test_ring_rows_by_hand():
    # R = 4, window 3, P = 2. Request 0 -> slot 1 (lowest free), request 1 -> slot 2.
    case = ring_case([Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
                      Step("decode", rids=(1, 0)), Step("verify", rids=(0,)),
                      Step("finish", rid=0), Step("admit", rid=2, length=1),
                      Step("draft_extend", rids=(2,), accept=(1,)),
                      Step("idle", tokens=2)])
    exp = expect(case)
    f = exp.forwards
    # admit 5: positions 0..4, final 4: p <= 1 skipped; rows 4 + p % 4
    assert f[0].targets == [-1, -1, 4 + 2, 4 + 3, 4 + 0]
    assert f[1].targets == [8 + 0, 8 + 1]
    # decode: rid 1 at position 2 (slot 2), rid 0 at position 5 (slot 1)
    assert f[2].targets == [8 + 2, 4 + 1]
    # verify 2 tokens of rid 0: positions 6, 7
    assert f[3].targets == [4 + 2, 4 + 3]
    # rid 0 finished: rid 2 gets slot 1 again, position 0
    assert f[4].targets == [4 + 0]
    assert f[5].targets == [4 + 0]  # draft-extend of its one token
    assert f[6].targets == [] and f[6].rows_eager == 2  # IDLE: dummy rows only
    # M is never written
    assert all(v == 0 for v in exp.steps[-1].mapping[:-1]) and exp.steps[-1].mapping[-1] == -1
    # slot 0 (rows 0..3) is never written by a real row; the skipped rows write nothing
    rb = case.pool.row_bytes
    pool = exp.steps[0].pools["target"][0]
    from swafuzz.scenarios.payload import rows_bytes

    data = rows_bytes(case.payload_seed, 0, 0, "target", 0, 5, rb)
    assert pool[4 * rb:5 * rb] == data[4 * rb:5 * rb]  # row 4: position 4 (position 0 skipped)
    assert pool[5 * rb:6 * rb] == bytes([0x5A]) * rb  # row 5: position 1 was skipped
    assert ring_row(1, 1, 4, 4, 3) == -1 and ring_row(1, 2, 4, 4, 3) == 6
    assert ring_cost(5, 4) == 8 and ring_cost(4, 4) == 4


def test_slots_exhausted_is_infeasible():
    case = ring_case([Step("admit", rid=0, length=1), Step("admit", rid=1, length=1),
                      Step("admit", rid=2, length=1)])
    with pytest.raises(CaseInfeasible, match="no free request slot"):
        expect(case)


def test_observed_slots_and_allocation_are_validated():
    case = ring_case([Step("admit", rid=0, length=1)])
    # the target chose slot 2 (sglang pops the highest): followed
    exp = expect(case, observed_alloc=[[[2, 0]]], observed_channels=[{"ring": {"slots": {0: 2}}}])
    assert exp.forwards[0].targets == [8]
    with pytest.raises(AllocationRejected, match="slot 0, the padding row"):
        expect(case, observed_alloc=[[[2, 0]]], observed_channels=[{"ring": {"slots": {0: 0}}}])
    with pytest.raises(AllocationRejected, match="never writes the full->SWA mapping"):
        expect(case, observed_alloc=[[[2, 2]]], observed_channels=[{"ring": {"slots": {0: 1}}}])


def _state(**kw):
    st = {"slots": {0: 1}, "free_slots": [2], "available": 14, "swa_available": 4,
          "swa_paged_available": 4, "swa_paged_size": 4}
    st.update(kw)
    return st


@pytest.mark.parametrize("change,rule", [
    ({}, None),
    ({"slots": {0: 0}, "free_slots": [1, 2]}, "slot"),
    ({"slots": {0: 1}, "free_slots": [1, 2]}, "slot"),
    ({"available": 16}, "R5"),
    ({"swa_available": 8}, "R5"),
    ({"swa_paged_available": 6}, "R5"),
])
def test_ring_invariants(change, rule):
    case = ring_case([])
    m = [0] * case.pool.mapping_len
    m[-1] = -1
    full_free = list(range(2, 9))  # 7 free full pages of 2 -> 14
    v = ring_invariants(case, _state(**change), m, full_free, [1, 2], {0: (1, 0)})
    if rule is None:
        assert v == []
    else:
        assert v and v[0].startswith(rule), v


def test_ring_invariants_mapping_written_and_paged_drawn():
    case = ring_case([])
    m = [0] * case.pool.mapping_len
    m[-1] = -1
    m[2] = 2
    v = ring_invariants(case, _state(), m, list(range(2, 9)), [2], {0: (1, 0)})
    assert v[0].startswith("R4") and any("drawn from" in x for x in v)
