"""Whole Cases through the driver: a decode episode under eager and tape, the Observation's
shape, DP padding, error recording, the registry."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import get_target, register, run_case
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine

executors = pytest.importorskip("swafuzz.harness.executors")
HAVE_TAPE = importlib.util.find_spec("swafuzz.harness.executors.tape") is not None

POOL = PoolConfig(page_size=2, full_pages=64, swa_pages=24, window=4, layers=2, draft_layers=1,
                  row_width=3, row_dtype="bfloat16")
BATCHES = [(1, 2, 3), (1, 2, 3, 4), (2, 3, 4), (1, 3), (1, 2, 3, 4), (4, 1, 2)]


def decode_episode() -> Case:
    """4 requests; 20 graph decode steps whose raw bs moves inside bucket 4 (3, 4, 3, ...) and
    across buckets; window evictions every few steps."""
    steps = [Step("admit", rid=r, length=2 + r) for r in (1, 2, 3, 4)]
    for k in range(20):
        steps.append(Step("decode", rids=BATCHES[k % len(BATCHES)], exec="graph"))
        if k % 3 == 2:
            steps += [Step("evict", rid=r) for r in (1, 2, 3, 4)]
    return Case(pool=POOL, graph=GraphConfig(buckets=(1, 2, 4, 8)), steps=tuple(steps),
                payload_seed=11, kind="decode")


def real_slot_bytes(obs, P, rb):
    """Per step, per pool and layer: the bytes outside the dummy page."""
    return [{k: [b[P * rb:] for b in v] for k, v in s.pools.items()} for s in obs.steps]


def test_decode_episode_eager_and_tape_agree():
    if not HAVE_TAPE:
        pytest.skip("harness/executors/tape.py is not there yet")
    case = decode_episode()
    eager = run_case(case, executor=executors.get_executor("eager"))
    tape = run_case(case, executor=executors.get_executor("tape"))
    assert eager.error is None and tape.error is None, (eager.error, tape.error)
    assert len(eager.steps) == len(tape.steps) == len(case.steps)
    P, rb = POOL.page_size, POOL.row_bytes
    assert real_slot_bytes(eager, P, rb) == real_slot_bytes(tape, P, rb)
    assert [s.mapping for s in eager.steps] == [s.mapping for s in tape.steps]
    graph = [f for f in tape.forwards if f.exec == "graph"]
    assert len(graph) == 20
    for fe, fg in zip([f for f in eager.forwards if f.mode == "DECODE"], graph):
        assert fg.rows == {1: 1, 2: 2, 3: 4, 4: 4}[fg.n_real] and fg.baked == {"rows": [fg.rows]}
        for se, sg in zip(fe.stores, fg.stores):
            assert sg.loc_dtype == se.loc_dtype == "int32"
            assert sg.locs[:fg.n_real] == se.locs and all(v >= P for v in se.locs)
            assert sg.locs[fg.n_real:] == [0] * (fg.rows - fg.n_real), "padding -> dummy slot"
    for s in tape.steps:
        for rz in s.redzones["target"] + s.redzones["draft"]:
            assert rz.before == rz.canary and rz.after == rz.canary
        assert s.draft_mapping_is_target


def test_decode_episode_matches_oracle():
    """Cross-check with the independent oracle (plain Python), when it is there."""
    engine = pytest.importorskip("swafuzz.oracles.engine")
    case = decode_episode()
    exp = engine.expect(case)
    obs = run_case(case, executor=executors.get_executor("eager"))
    assert obs.error is None
    assert [(f.step, f.mode, f.n_real) for f in obs.forwards] == \
        [(e.step, e.mode, e.n_real) for e in exp.forwards]
    for f, e in zip(obs.forwards, exp.forwards):
        assert all(s.locs == e.targets for s in f.stores)
    P, rb = POOL.page_size, POOL.row_bytes
    for s, e in zip(obs.steps, exp.steps):
        assert s.mapping == e.mapping
        assert (s.free_full_pages, s.free_swa_pages) == (e.free_full_pages, e.free_swa_pages)
        assert {k: [b[P * rb:] for b in v] for k, v in s.pools.items()} == \
            {k: [bytes(b[P * rb:]) for b in v] for k, v in e.pools.items()}


def test_observation_shape_for_eager_steps():
    case = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, layers=2, draft_layers=1),
                graph=GraphConfig(topk=1, num_steps=2, num_draft_tokens=2),
                steps=(Step("admit", rid=0, length=2), Step("idle", tokens=3),
                       Step("dp_decode", rids=(0,), rank_tokens=(3,)),
                       Step("dp_decode", rids=(), rank_tokens=(2,)),
                       Step("draft_extend", rids=(0,), accept=(2,)),
                       Step("draft_decode", rids=(0,))))
    obs = run_case(case)  # no executor: eager on CPU
    assert obs.error is None and obs.executor == "eager" and obs.target == "unified"
    summary = [(f.step, f.fwd, f.pool, f.mode, f.n_real, f.rows) for f in obs.forwards]
    assert summary == [(0, 0, "target", "EXTEND", 2, 2), (1, 0, "target", "IDLE", 0, 3),
                       (2, 0, "target", "DECODE", 1, 3), (3, 0, "target", "IDLE", 0, 2),
                       (4, 0, "draft", "DRAFT_EXTEND_V2", 2, 2),
                       (5, 0, "draft", "DECODE", 1, 1)]
    m = obs.steps[-1].mapping
    assert obs.forwards[0].stores[0].locs == [1, 2] and len(obs.forwards[0].stores) == 2
    assert obs.forwards[1].stores[0].locs == [0, 0, 0]
    assert obs.forwards[2].stores[0].locs == [m[3], 0, 0]  # rebound after metadata init
    assert obs.forwards[4].stores[0].locs == [m[2], m[3]]
    assert obs.forwards[5].stores[0].locs == [m[4]]  # step 0 of tokens 4, 5 (k=0, s=0 / s=1)
    assert [len(s.pools["target"]) for s in obs.steps] == [2] * 6


class _Int64Backend(DSV4Backend):
    def get_store_loc(self, layer_id, fb):
        return self.get_swa_out_cache_loc(fb).to(torch.int64)


def test_target_error_is_recorded_and_stops():
    register("test:int64", type("E", (UnifiedEngine,), {"backend_cls": _Int64Backend}))
    case = Case(steps=(Step("admit", rid=0, length=1), Step("finish", rid=0)))
    obs = run_case(case, target="test:int64")
    assert obs.error["step"] == 0 and obs.error["type"] == "ContractError"
    assert "int32" in obs.error["message"]
    assert obs.steps == [] and obs.forwards == []


def test_registry():
    from swafuzz.targets import available_targets, origin, recipe

    assert get_target("unified") is UnifiedEngine
    with pytest.raises(KeyError, match="no such target"):
        get_target("nope")
    # the crash self-test runs by name but is not offered
    assert get_target("selftest:segfault") and "selftest:segfault" not in available_targets()
    assert origin("unified") is None and origin("mutant:memo_data_ptr") is None
    # a factory defined inside a function cannot be re-imported by a worker: a clear error
    register("test:local", type("Local", (UnifiedEngine,), {}))
    with pytest.raises(ValueError, match="cannot import"):
        recipe("test:local")


def test_decode_episode_triton_matches_torch():
    from swafuzz import kernels

    if "triton" not in kernels.available_impls():
        pytest.skip("triton is not usable here (no GPU and TRITON_INTERPRET unset)")
    if not HAVE_TAPE:
        pytest.skip("harness/executors/tape.py is not there yet")
    case = decode_episode()
    a = run_case(case, impl="torch", executor=executors.get_executor("tape"))
    b = run_case(case, impl="triton", executor=executors.get_executor("tape"))
    assert a.error is None and b.error is None, (a.error, b.error)
    assert [s.pools for s in a.steps] == [s.pools for s in b.steps]
    assert [[s.locs for s in f.stores] for f in a.forwards] == \
        [[s.locs for s in f.stores] for f in b.forwards]
