"""Hand-computed Cases for the engine oracle and the pool invariants (plain Python, < 1 s)."""

from __future__ import annotations

import pytest

from swafuzz.oracles.engine import CaseInfeasible, expect
from swafuzz.oracles.invariants import pool_invariants
from swafuzz.oracles.shadow import Shadow
from swafuzz.scenarios.case import POISON_BYTE, Case, GraphConfig, PoolConfig, Step
from swafuzz.scenarios.payload import rows_bytes

RB = 4  # row bytes (uint8, width 4)


def row(seed, step, fwd, pool, layer, r, n):
    return rows_bytes(seed, step, fwd, pool, layer, n, RB)[r * RB:(r + 1) * RB]


def slot(buf, s):
    return bytes(buf[s * RB:(s + 1) * RB])


# ---------------------------------------------------------------- P = 1
CASE_P1 = Case(
    pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, window=2, layers=2, draft_layers=1),
    graph=GraphConfig(buckets=(1, 2, 4, 8), num_draft_tokens=2),
    payload_seed=11,
    steps=(
        Step("admit", rid=1, length=2),                             # 0
        Step("admit", rid=2, length=1),                             # 1
        Step("decode", rids=(2, 1), exec="graph"),                  # 2
        Step("evict", rid=1),                                       # 3
        Step("verify", rids=(1,)),                                  # 4
        Step("draft_extend", rids=(1, 2), accept=(2, 1), exec="graph"),  # 5
        Step("idle", tokens=3, exec="graph"),                       # 6
        Step("dp_decode", rids=(), rank_tokens=(3, 1)),             # 7
        Step("dp_decode", rids=(2,), rank_tokens=(2,), exec="graph"),  # 8
        Step("finish", rid=1),                                      # 9
    ),
)


def test_p1_forwards():
    fw = [(f.step, f.fwd, f.pool, f.mode, f.exec, f.n_real, f.targets, f.full_locs, f.rows_eager,
           f.rows_graph) for f in expect(CASE_P1).forwards]
    assert fw == [
        (0, 0, "target", "EXTEND", "eager", 2, [1, 2], [1, 2], 2, None),
        (1, 0, "target", "EXTEND", "eager", 1, [3], [3], 1, None),
        (2, 0, "target", "DECODE", "graph", 2, [4, 5], [4, 5], 2, 2),
        (4, 0, "target", "TARGET_VERIFY", "eager", 2, [1, 6], [6, 7], 2, 2),
        (5, 0, "draft", "DRAFT_EXTEND_V2", "graph", 3, [1, 6, 4], [6, 7, 4], 3, 4),
        (6, 0, "target", "IDLE", "graph", 0, [], [], 3, 4),
        (7, 0, "target", "IDLE", "eager", 0, [], [], 3, 4),
        (8, 0, "target", "DECODE", "graph", 1, [7], [8], 2, 2),
    ]


def test_p1_state():
    st = expect(CASE_P1).steps
    assert [s.op for s in st] == [s.op for s in CASE_P1.steps]
    s3 = st[3]  # after evict(1): len 3, window 2 -> frontier 1, SWA slot 1 freed
    assert s3.mapping == [0, 0, 2, 3, 4, 5, 0, 0, 0, -1]
    assert s3.free_swa_pages == [1, 6, 7, 8] and s3.free_full_pages == [6, 7, 8]
    assert s3.requests == {1: ([1, 2, 5], 1), 2: ([3, 4], 0)}
    s4 = st[4]  # verify reuses the lowest free SWA page (1)
    assert s4.mapping[6:8] == [1, 6]
    last = st[9]
    assert last.mapping == [0, 0, 0, 3, 4, 0, 0, 0, 7, -1]
    assert last.free_full_pages == [1, 2, 5, 6, 7]
    assert last.free_swa_pages == [1, 2, 5, 6, 8]
    assert last.requests == {2: ([3, 4, 8], 0)}


def test_p1_pool_bytes():
    st = expect(CASE_P1).steps
    tgt, drf = st[-1].pools["target"], st[-1].pools["draft"]
    assert len(tgt) == 2 and len(drf) == 1
    assert all(len(b) == 9 * RB for b in tgt + drf)
    assert slot(st[0].pools["target"][1], 1) == row(11, 0, 0, "target", 1, 0, 2)
    assert slot(tgt[0], 1) == row(11, 4, 0, "target", 0, 0, 2)  # verify overwrote slot 1
    assert slot(tgt[1], 6) == row(11, 4, 0, "target", 1, 1, 2)
    assert slot(tgt[0], 7) == row(11, 8, 0, "target", 0, 0, 1)
    assert slot(tgt[0], 8) == bytes([POISON_BYTE]) * RB
    assert slot(drf[0], 4) == row(11, 5, 0, "draft", 0, 2, 3)
    assert slot(drf[0], 3) == bytes([POISON_BYTE]) * RB
    assert st[0].pools["draft"][0] == bytearray([POISON_BYTE]) * (9 * RB)
    assert st[6].pools == st[5].pools  # IDLE writes only the dummy page


# ---------------------------------------------------------------- P = 4
CASE_P4 = Case(
    pool=PoolConfig(page_size=4, full_pages=5, swa_pages=4, window=3),
    graph=GraphConfig(buckets=(1, 2), topk=2, num_steps=2, num_draft_tokens=3),
    payload_seed=3,
    steps=(
        Step("admit", rid=7, length=5),               # 0
        Step("admit", rid=9, length=2),               # 1
        Step("evict", rid=7),                         # 2: 5-3=2 -> floor 0: nothing
        Step("decode", rids=(7, 9)),                  # 3
        Step("decode", rids=(7,)),                    # 4
        Step("evict", rid=7),                         # 5: 7-3=4 -> frees SWA page 1
        Step("draft_decode", rids=(9,), exec="graph"),  # 6
        Step("verify", rids=(7,)),                    # 7
        Step("finish", rid=9),                        # 8
    ),
)


def test_p4_forwards_and_state():
    exp = expect(CASE_P4)
    fw = [(f.step, f.fwd, f.pool, f.mode, f.targets, f.full_locs, f.rows_eager, f.rows_graph)
          for f in exp.forwards]
    assert fw == [
        (0, 0, "target", "EXTEND", [4, 5, 6, 7, 8], [4, 5, 6, 7, 8], 5, None),
        (1, 0, "target", "EXTEND", [12, 13], [12, 13], 2, None),
        (3, 0, "target", "DECODE", [9, 14], [9, 14], 2, 2),
        (4, 0, "target", "DECODE", [10], [10], 1, 1),
        # new tokens of rid 9: 15 (swa 15), 16 (swa 4, fresh page 1), 17 (5), 18 (6);
        # k-major loc[k, s]: step 0 -> [loc[0,0], loc[1,0]] = [15, 17]
        (6, 0, "draft", "DECODE", [15, 5], [15, 17], 2, 2),
        (7, 0, "target", "TARGET_VERIFY", [11, 16, 17], [11, 20, 21], 3, 3),
    ]
    st = exp.steps
    assert st[2].mapping == st[1].mapping
    assert st[5].requests[7] == ([4, 5, 6, 7, 8, 9, 10], 4)
    assert st[5].mapping[4:11] == [0, 0, 0, 0, 8, 9, 10]
    assert st[5].free_swa_pages == [1, 4]
    assert st[6].requests[9] == ([12, 13, 14, 15, 16, 17, 18], 0)
    assert st[6].mapping[16:19] == [4, 5, 6]  # last draft step's tokens allocated, not written
    last = st[8]
    assert len(last.mapping) == 25 and last.mapping[-1] == -1
    assert last.free_full_pages == [3, 4] and last.free_swa_pages == [1, 3]
    assert last.requests == {7: ([4, 5, 6, 7, 8, 9, 10, 11, 20, 21], 4)}
    drf = last.pools["draft"][0]
    assert slot(drf, 5) == row(3, 6, 0, "draft", 0, 1, 2)
    assert slot(drf, 15) == row(3, 6, 0, "draft", 0, 0, 2)
    assert slot(drf, 6) == bytes([POISON_BYTE]) * RB  # loc[0,1] (step 1) is never written
    assert slot(last.pools["target"][0], 16) == row(3, 7, 0, "target", 0, 1, 3)


def test_invariants_hold_on_every_step():
    for case in (CASE_P1, CASE_P4):
        cfg = case.pool
        for s in expect(case).steps:
            assert pool_invariants(s.mapping, s.free_full_pages, s.free_swa_pages, s.requests,
                                   cfg.page_size, cfg.full_pages, cfg.swa_pages) == [], s.step


# ---------------------------------------------------------------- infeasible
P1 = PoolConfig(page_size=1, full_pages=4, swa_pages=4, window=2)


@pytest.mark.parametrize("pool,graph,steps,needle", [
    (P1, GraphConfig(), [Step("decode", rids=(1,))], "not live"),
    (P1, GraphConfig(), [Step("admit", rid=1, length=1)] * 2, "admitted twice"),
    (P1, GraphConfig(), [Step("admit", rid=1, length=1), Step("finish", rid=1),
                         Step("admit", rid=1, length=1)], "admitted twice"),
    (P1, GraphConfig(), [Step("admit", rid=1, length=5)], "fresh full pages"),
    (PoolConfig(page_size=1, full_pages=8, swa_pages=2), GraphConfig(),
     [Step("admit", rid=1, length=3)], "fresh swa pages"),
    (PoolConfig(page_size=2, full_pages=4, swa_pages=4), GraphConfig(num_draft_tokens=3),
     [Step("admit", rid=1, length=2), Step("admit", rid=2, length=2),
      Step("verify", rids=(1, 2))], "needs 4 fresh full pages, 2 free"),
    (P1, GraphConfig(buckets=(1,)), [Step("admit", rid=1, length=1),
                                     Step("admit", rid=2, length=1),
                                     Step("decode", rids=(1, 2), exec="graph")], "bucket"),
    (P1, GraphConfig(buckets=(1, 2)), [Step("idle", tokens=3, exec="graph")], "bucket"),
    (P1, GraphConfig(buckets=(1, 2)), [Step("dp_decode", rank_tokens=(3,), exec="graph")],
     "bucket"),
    (P1, GraphConfig(num_draft_tokens=2), [Step("admit", rid=1, length=3),
                                           Step("draft_extend", rids=(1,), accept=(3,))],
     "accept 3"),
    (P1, GraphConfig(num_draft_tokens=4), [Step("admit", rid=1, length=2),
                                           Step("draft_extend", rids=(1,), accept=(3,))],
     "length=2"),
    (P1, GraphConfig(num_draft_tokens=4), [Step("admit", rid=1, length=2),
                                           Step("draft_extend", rids=(1,), accept=(0,))],
     "accept 0"),
    (P1, GraphConfig(topk=0, num_steps=2), [Step("admit", rid=1, length=1),
                                            Step("draft_decode", rids=(1,))], "topk >= 1"),
    (P1, GraphConfig(topk=1, num_steps=1), [Step("admit", rid=1, length=1),
                                            Step("draft_decode", rids=(1,))], "num_steps >= 2"),
    (P1, GraphConfig(), [Step("admit", rid=1, length=1), Step("decode", rids=(1, 1))], "repeat"),
    (P1, GraphConfig(), [Step("evict", rid=3)], "not live"),
    (P1, GraphConfig(), [Step("dp_decode", rank_tokens=(0,))], "no rows"),
])
def test_infeasible(pool, graph, steps, needle):
    with pytest.raises(CaseInfeasible) as ei:
        expect(Case(pool=pool, graph=graph, steps=tuple(steps)))
    assert ei.value.step == len(steps) - 1
    assert needle in str(ei.value)


def test_eager_step_without_bucket_is_fine():
    case = Case(pool=P1, graph=GraphConfig(buckets=(1,)),
                steps=(Step("admit", rid=1, length=1), Step("admit", rid=2, length=1),
                       Step("decode", rids=(1, 2))))
    assert expect(case).forwards[-1].rows_graph is None


def test_unmapped_last_page_is_infeasible():
    case = Case(pool=PoolConfig(page_size=4, full_pages=4, swa_pages=4), steps=())
    sh = Shadow(case)
    sh.run_step(0, Step("admit", rid=1, length=2))
    sh.free_swa_slots(sh.tokens[1])  # a state no valid Case reaches
    with pytest.raises(CaseInfeasible, match="no SWA page"):
        sh.run_step(1, Step("decode", rids=(1,)))


# ---------------------------------------------------------------- invariants on bad states
def _good():
    s = expect(CASE_P4).steps[5]  # rid 7 evicted to 4, rid 9 live
    return dict(mapping=list(s.mapping), free_full_pages=list(s.free_full_pages),
                free_swa_pages=list(s.free_swa_pages),
                requests={r: (list(t), e) for r, (t, e) in s.requests.items()},
                page_size=4, full_pages=5, swa_pages=4)


def _bad(mutate):
    st = _good()
    assert pool_invariants(**st) == []
    mutate(st)
    return pool_invariants(**st)


@pytest.mark.parametrize("mutate,rule", [
    (lambda s: s["mapping"].__setitem__(-1, 0), "sentinel"),
    (lambda s: s["mapping"].__setitem__(0, 4), "slot0"),
    (lambda s: s["mapping"].__setitem__(8, 3), "range"),       # into the dummy page
    (lambda s: s["mapping"].__setitem__(8, 20), "range"),      # past the SWA buffer
    (lambda s: s["mapping"].__setitem__(9, 12), "unique"),
    (lambda s: s["mapping"].__setitem__(9, 18), "offset"),
    (lambda s: s["free_swa_pages"].append(0), "free-page0"),
    (lambda s: s["free_full_pages"].append(9), "free-range"),
    (lambda s: s["free_swa_pages"].append(1), "free-dup"),
    (lambda s: s["free_full_pages"].append(2), "free-in-use"),
    (lambda s: s["free_swa_pages"].append(3), "free-in-use"),
    (lambda s: s["mapping"].__setitem__(9, 0), "in-window"),
    (lambda s: s["mapping"].__setitem__(5, 5), "evicted"),      # eviction without unmapping
    (lambda s: s["mapping"].__setitem__(16, 16), "orphan"),
    (lambda s: s["free_swa_pages"].remove(4), "accounting"),
    (lambda s: s["requests"].__setitem__(7, (s["requests"][7][0], 3)), "frontier"),
    (lambda s: s["requests"][9][0].append(4), "token-dup"),
])
def test_invariants_name_the_rule(mutate, rule):
    msgs = _bad(mutate)
    assert any(m.startswith(rule + ":") for m in msgs), msgs


# ---------------------------------------------------------------- random episodes (seeded)
def _random_step(rng, live, next_rid):
    op = rng.choice(["admit", "decode", "verify", "draft_extend", "draft_decode", "idle",
                     "dp_decode", "evict", "finish"])
    ex = rng.choice(["eager", "graph"])
    pick = rng.sample(sorted(live), rng.randint(0, len(live))) if live else []
    if rng.random() < 0.05:
        pick.append(99)  # unknown rid now and then
    if op == "admit":
        return Step("admit", rid=next_rid, length=rng.randint(1, 9))
    if op in ("evict", "finish"):
        return Step(op, rid=rng.choice(sorted(live) + [99]))
    if op == "idle":
        return Step("idle", tokens=rng.randint(1, 10), exec=ex)
    if op == "dp_decode":
        return Step("dp_decode", rids=tuple(pick),
                    rank_tokens=tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 3))),
                    exec=ex)
    if op == "draft_extend":
        return Step(op, rids=tuple(pick), accept=tuple(rng.randint(1, 3) for _ in pick), exec=ex)
    return Step(op, rids=tuple(pick), exec=ex)


def _snap(sh):
    return (list(sh.M), sorted(sh.free_full), sorted(sh.free_swa),
            {r: (list(t), sh.evicted[r]) for r, t in sh.tokens.items()},
            {k: [bytes(b) for b in v] for k, v in sh.pools.items()}, len(sh.exp.forwards))


@pytest.mark.parametrize("seed", range(12))
def test_random_episodes_keep_invariants(seed):
    import random

    rng = random.Random(seed)
    p = [1, 2, 4][seed % 3]
    case = Case(pool=PoolConfig(page_size=p, full_pages=12, swa_pages=rng.randint(4, 12),
                                window=rng.randint(1, 6)),
                graph=GraphConfig(buckets=(1, 2, 4), topk=rng.randint(0, 2), num_steps=2,
                                  num_draft_tokens=rng.randint(1, 3)),
                payload_seed=seed)
    sh = Shadow(case)
    accepted, next_rid, n_bad = [], 0, 0
    for _ in range(60):
        step = _random_step(rng, set(sh.tokens), next_rid)
        before = _snap(sh)
        try:
            sh.run_step(len(accepted), step)
        except CaseInfeasible:
            n_bad += 1
            assert _snap(sh) == before  # an infeasible step changes nothing
            continue
        accepted.append(step)
        next_rid += step.op == "admit"
        s = sh.exp.steps[-1]
        assert pool_invariants(s.mapping, s.free_full_pages, s.free_swa_pages, s.requests,
                               p, 12, case.pool.swa_pages) == []
        for f in sh.exp.forwards:
            if f.step == len(accepted) - 1 and f.mode in ("EXTEND", "DECODE", "TARGET_VERIFY"):
                assert all(t >= p and t % p == loc % p for t, loc in zip(f.targets, f.full_locs))
    assert accepted and n_bad
    again = expect(Case(pool=case.pool, graph=case.graph, payload_seed=seed,
                        steps=tuple(accepted)))
    assert again.forwards == sh.exp.forwards and again.steps == sh.exp.steps


def test_draft_extend_of_evicted_tokens_targets_dummy_page():
    case = Case(pool=PoolConfig(page_size=1, full_pages=4, swa_pages=4, window=1),
                graph=GraphConfig(num_draft_tokens=3),
                steps=(Step("admit", rid=5, length=3), Step("evict", rid=5),
                       Step("draft_extend", rids=(5,), accept=(3,))))
    exp = expect(case)
    f = exp.forwards[-1]
    assert (f.full_locs, f.targets, f.n_real, f.rows_graph) == ([1, 2, 3], [0, 0, 3], 3, 3)
    drf = exp.steps[-1].pools["draft"][0]
    assert slot(drf, 3) == row(0, 2, 0, "draft", 0, 2, 3)
    assert slot(drf, 1) == slot(drf, 2) == bytes([POISON_BYTE]) * RB


def test_pools_last_step_only():
    full, lean = expect(CASE_P4), expect(CASE_P4, pools_every_step=False)
    assert all(s.pools == {} for s in lean.steps[:-1])
    assert lean.steps[-1].pools == full.steps[-1].pools and lean.forwards == full.forwards
