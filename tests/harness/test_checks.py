"""Each check fails on a hand-corrupted Observation, with a message that names where and what.

What: a clean Observation of ``unified`` on a small fixed Case passes every check; then one
field is corrupted at a time (a resolved slot, a pool byte, a canary byte, the mapping, a baked
value, a dtype) and exactly the check that owns it must fail, naming step, layer, row or slot,
expected and actual, and "N of M". Complements the zoo (which proves each check on real bugs).
Reproduce: ``pytest tests/harness/test_checks.py``.
"""

import copy

import pytest

from swafuzz.checks.base import RECAPTURE_EXECUTOR, Failure
from swafuzz.checks.contracts import check_contracts, check_exec_path
from swafuzz.checks.cross import check_agreement, check_capture_freeze
from swafuzz.checks.invariants import check_invariants
from swafuzz.checks.registry import all_checks, check, registered
from swafuzz.checks.runner import run_checks
from swafuzz.checks.write import (
    check_pool_bytes,
    check_redzones,
    check_write_set,
    check_write_targets,
)
from swafuzz.harness.executors import get_executor
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import run_case

CASE = Case(
    pool=PoolConfig(page_size=2, full_pages=6, swa_pages=6, window=2, layers=2, row_width=3),
    graph=GraphConfig(buckets=(2, 4)),
    steps=(Step(op="admit", rid=0, length=3), Step(op="admit", rid=1, length=2),
           Step(op="decode", rids=(0, 1), exec="graph"), Step(op="decode", rids=(1,), exec="graph"),
           Step(op="evict", rid=0)),
    payload_seed=5, kind="decode")


@pytest.fixture(scope="module")
def clean():
    exp = expect(CASE)
    obs = [run_case(CASE, "unified", "torch", get_executor(e)) for e in ("eager", "tape")]
    return obs, exp


def test_clean_passes_everything(clean):
    obs, exp = clean
    fails, n = run_checks(CASE, obs, exp)
    per_observation = [c for c in all_checks() if not c.across]
    assert fails == [] and n == 2 * len(per_observation) + 1  # + agreement (no reference)


def _graph_fwd(o):
    return next(f for f in o.forwards if f.exec == "graph" and f.n_real < f.rows)


def test_write_targets(clean):
    o = copy.deepcopy(clean[0][1])
    f = _graph_fwd(o)
    f.stores[1].locs[0] = 0
    (fail,) = check_write_targets(CASE, o, clean[1])
    assert fail.slot_class == "dummy"
    assert f"step {f.step}" in fail.message and "layer 1" in fail.message
    assert "1 of 2 rows differ" in fail.message and "row 0 (real" in fail.message
    assert "got 0 (dummy page)" in fail.message
    o = copy.deepcopy(clean[0][1])
    _graph_fwd(o).stores[0].locs[-1] = 7  # a padded row into a live slot
    (fail,) = check_write_targets(CASE, o, clean[1])
    assert "padded" in fail.message and fail.slot_class == "live-instead-of-dummy"
    assert "got 7 (the slot of full loc" in fail.message and ", request " in fail.message


def test_pool_bytes_and_write_set(clean):
    o = copy.deepcopy(clean[0][1])
    s = o.steps[2]
    rb = CASE.pool.row_bytes
    slot = 5  # outside the dummy page, never written by this Case
    buf = bytearray(s.pools["target"][0])
    buf[slot * rb] ^= 0xFF
    for later in o.steps[2:]:
        later.pools["target"][0] = bytes(buf) if later is s else later.pools["target"][0]
    (fail,) = check_pool_bytes(CASE, o, clean[1])
    assert f"first slot {slot}" in fail.message and "after step 2" in fail.message
    assert "of 12 slots differ" in fail.message
    (fail,) = check_write_set(CASE, o, clean[1])
    assert f"first slot {slot}" in fail.message


def test_redzones(clean):
    o = copy.deepcopy(clean[0][1])
    z = o.steps[3].redzones["draft"][0]
    z.before = b"\x00" + z.before[1:]
    (fail,) = check_redzones(CASE, o, clean[1])
    assert "1 of" in fail.message and "before the buffer" in fail.message
    assert fail.slot_class == "negative"


def test_invariants(clean):
    o = copy.deepcopy(clean[0][1])
    m = o.steps[4].mapping
    f = max(i for i, v in enumerate(m) if v > 0)  # a live, in-window position loses its peer
    m[f] = 0
    fails = check_invariants(CASE, o, clean[1])
    assert fails and "after step 4 (evict)" in fails[0].message
    o = copy.deepcopy(clean[0][1])
    o.steps[0].draft_mapping_is_target = False
    assert "does not share" in check_invariants(CASE, o, clean[1])[0].message
    # the engine's request table is judged against the Case, not the oracle's allocator
    o = copy.deepcopy(clean[0][1])
    toks, _ = o.steps[4].requests[0]
    o.steps[4].requests[0] = (toks, 0)  # the frontier did not advance
    (fail,) = check_invariants(CASE, o, None)
    assert "request table differs from the Case" in fail.message and "request 0" in fail.message
    assert fail.step == 4


def test_invariants_do_not_read_the_oracle(clean):
    """The invariants check gets no Expectation at all and still passes / fails correctly."""
    assert check_invariants(CASE, clean[0][1], None) == []
    o = copy.deepcopy(clean[0][1])
    m = o.steps[4].mapping
    m[max(i for i, v in enumerate(m) if v > 0)] = 0
    assert check_invariants(CASE, o, None)


def test_agreement(clean):
    eager, tape = copy.deepcopy(clean[0])
    f = next(x for x in tape.forwards if x.step == 3)
    f.stores[0].locs[0] += 2
    (fail,) = check_agreement(CASE, [eager, tape])
    assert "under eager but" in fail.message and "under tape" in fail.message


def test_capture_freeze(clean):
    """Judged against the recapture reference (the same Case with every graph recaptured on its
    live inputs), never from what the target reports it baked."""
    eager, tape = clean[0]
    ref = copy.deepcopy(tape)
    ref.executor = RECAPTURE_EXECUTOR
    assert check_capture_freeze(CASE, [eager, tape, ref]) == []
    o = copy.deepcopy(tape)
    f = _graph_fwd(o)
    f.baked["swa_out_cache_loc"] = [0] * f.rows  # self-report: ignored
    assert check_capture_freeze(CASE, [eager, o, ref]) == []
    f.stores[0].locs[0] = 0  # the replayed graph used a stale translation
    (fail,) = check_capture_freeze(CASE, [eager, o, ref])
    assert "stale" == fail.slot_class and "recaptured" in fail.message
    assert (fail.step, fail.fwd) == (f.step, f.fwd)
    assert check_capture_freeze(CASE, [eager, o]) is None  # no reference, nothing judged


def test_contracts(clean):
    o = copy.deepcopy(clean[0][1])
    _graph_fwd(o).stores[0].loc_dtype = "int64"
    assert check_contracts(CASE, o, clean[1])[0].slot_class == "dtype"
    o = copy.deepcopy(clean[0][1])
    _graph_fwd(o).stores[0].locs[1] = -1
    assert check_contracts(CASE, o, clean[1])[0].slot_class == "negative"
    o = copy.deepcopy(clean[0][1])
    o.error = {"step": 2, "type": "ContractError", "message": "store: loc must be int32"}
    assert "refused a valid Case" in check_contracts(CASE, o, clean[1])[-1].message


def test_exec_path(clean):
    """Graph or eager, rows and the harness-counted replays are judged from the Case alone."""
    assert check_exec_path(CASE, clean[0][1], None) == []
    o = copy.deepcopy(clean[0][1])
    f = _graph_fwd(o)
    f.exec = "eager"  # the target says it ran eagerly where the Case determines a graph
    (fail,) = check_exec_path(CASE, o, None)
    assert fail.slot_class == "path" and "the Case determines graph (bucket 2" in fail.message
    assert (fail.step, fail.fwd) == (f.step, f.fwd)
    o = copy.deepcopy(clean[0][1])
    _graph_fwd(o).stores[1].rows = 1  # a store that got only the real rows
    (fail,) = check_exec_path(CASE, o, None)
    assert "layer 1 store got 1 rows, expected 2" in fail.message
    o = copy.deepcopy(clean[0][1])
    o.graph_use = {"captures": 1, "replays": 0}  # the harness saw no replay
    (fail,) = check_exec_path(CASE, o, None)
    assert fail.slot_class == "graph-use" and "2 replays" in fail.message
    # an eager executor: every forward must be eager, the graph steps included
    assert check_exec_path(CASE, clean[0][0], None) == []
    o = copy.deepcopy(clean[0][0])
    o.forwards[2].exec = "graph"
    assert check_exec_path(CASE, o, None)[0].slot_class == "path"


def test_failures_ordered_earliest_first(clean):
    """A symptom at a later step is listed after its cause at an earlier step, whatever the
    check order."""
    o = copy.deepcopy(clean[0][1])
    z = o.steps[3].redzones["draft"][0]
    z.before = b"\x00" + z.before[1:]  # redzones (check 4) at step 3
    o.steps[1].draft_mapping_is_target = False  # invariants (check 5) at step 1
    _graph_fwd(o).stores[0].locs[0] = 0  # write_targets (check 1) at step 2 or 3
    fails, _ = run_checks(CASE, [o], clean[1])
    steps = [f.step for f in fails]
    assert steps == sorted(steps) and fails[0].check == "invariants"


def test_pool_bytes_names_whose_bytes_appeared(clean):
    o = copy.deepcopy(clean[0][1])
    rb = CASE.pool.row_bytes
    fwd_exp = next(e for e in clean[1].forwards if e.step == 2)
    a, b = fwd_exp.targets[0], fwd_exp.targets[1]
    for s in o.steps[2:3]:  # swap the two rows of step 2 in layer 0
        buf = bytearray(s.pools["target"][0])
        buf[a * rb:(a + 1) * rb], buf[b * rb:(b + 1) * rb] = (buf[b * rb:(b + 1) * rb],
                                                              buf[a * rb:(a + 1) * rb])
        s.pools["target"][0] = bytes(buf)
    (fail,) = check_pool_bytes(CASE, o, clean[1])
    assert "got" in fail.message and "step 2 fwd 0 target layer 0 row 1 (real" in fail.message
    assert "request 1" in fail.message
    o = copy.deepcopy(clean[0][1])
    buf = bytearray(o.steps[2].pools["target"][1])
    buf[a * rb:(a + 1) * rb] = bytes([0x5A]) * rb
    o.steps[2].pools["target"][1] = bytes(buf)
    assert "poison: never written" in check_pool_bytes(CASE, o, clean[1])[0].message


def test_run_checks_counts_what_ran(clean):
    """``only`` restricts the checks; a check across observations that has nothing to judge
    (agreement with one observation, capture_freeze without the recapture reference) does not
    count as run."""
    obs, exp = clean
    assert run_checks(CASE, obs, exp, only={"write_targets"}) == ([], 2)
    assert run_checks(CASE, obs, exp, only={"agreement"}) == ([], 1)
    assert run_checks(CASE, obs[:1], exp, only={"agreement"}) == ([], 0)
    assert run_checks(CASE, obs, exp, only={"capture_freeze"}) == ([], 0)
    ref = copy.deepcopy(obs[1])
    ref.executor = RECAPTURE_EXECUTOR
    assert check_agreement(CASE, [obs[0], ref]) is None  # the reference is never compared
    fails, n = run_checks(CASE, [*obs, ref], exp, only={"agreement", "capture_freeze"})
    assert fails == [] and n == 2
    fails, n = run_checks(CASE, [*obs, ref], exp, only={"write_targets"})
    assert n == 2  # the reference is not checked itself


def test_failures_at_one_forward_follow_registry_order(clean):
    """Failures of one step and forward are ordered as the checks are registered; failures of
    no registered check (a target error) come after them."""
    names = [c.name for c in all_checks()]
    fails = [Failure("error", "x", step=1), Failure(names[-1], "x", step=1),
             Failure(names[0], "x", step=1)]
    fails.sort(key=Failure.order_key)
    assert [f.check for f in fails] == [names[0], names[-1], "error"]


def test_check_decorator():
    """``@check`` registers where the function is defined and returns it unchanged; only the
    modules a feature record lists make up the registry."""

    def probe(case, obs, exp):
        return []

    assert check("probe_of_test_checks")(probe) is probe
    mine = [c for c in registered() if c.name == "probe_of_test_checks"]
    assert len(mine) == 1 and mine[0].module == __name__ and not mine[0].across
    assert mine[0].defence is None
    assert "probe_of_test_checks" not in {c.name for c in all_checks()}
    with pytest.raises(ValueError, match="lower-case identifier"):
        check("Bad Name")
    with pytest.raises(ValueError, match="non-empty"):
        check("probe_of_test_checks", defence="  ")
