"""The DSpark draft block on a per-request SWA ring (issue 12; ``draft_block``,
``features/ring/ring_draft/engine.py``) and its mutants (``features/ring/ring_draft/mutants.py``): a hand
Case with draft blocks between decodes, verifies, a slot reuse and a block that wraps past the
ring's end runs clean on ``unified`` under eager and tape; each mutant fails it on the check
named in its table; only the ``ring_draft`` kind generates ``draft_block`` steps, so only it
reaches the mutants."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import run_case
from swafuzz.targets.mutants import load_all

EXECUTORS = ["eager", "tape"]

# ring R = 6 >= window 3 + gamma 2; slots (lowest free): rid 0 -> 1, rid 1 -> 2, rid 2 -> 2
BLOCKS = Case(
    pool=PoolConfig(page_size=2, full_pages=16, swa_pages=2, window=3, swa_ring=6, req_slots=3,
                    layers=1, draft_layers=2),
    graph=GraphConfig(buckets=(1, 2, 4), num_draft_tokens=3),
    steps=(Step("admit", rid=0, length=7), Step("admit", rid=1, length=2),
           Step("draft_block", rids=(0, 1)), Step("decode", rids=(0, 1), exec="graph"),
           Step("verify", rids=(1,), exec="eager"), Step("draft_block", rids=(1, 0)),
           Step("finish", rid=1), Step("admit", rid=2, length=11),
           Step("draft_block", rids=(2,)), Step("draft_block", rids=(0, 2))),
    kind="ring_draft")


def test_oracle_block_rows():
    exp = expect(BLOCKS)
    blocks = [f for f in exp.forwards if f.step in (2, 5, 8)]
    # rid 0 (slot 1, L 7): positions 7, 8 -> 6 + 1, 6 + 2; rid 1 (slot 2, L 2): 12 + 2, 12 + 3
    assert blocks[0].targets == [7, 8, 14, 15] and blocks[0].pool == "draft"
    assert blocks[0].mode == "TARGET_VERIFY" and blocks[0].n_real == 4
    # after decode + verify (3 tokens): rid 1 L 6 -> 12 + 0, 12 + 1; rid 0 L 8 -> 8, 9
    assert blocks[1].targets == [12, 13, 8, 9]
    # rid 2 in slot 2, L 11: positions 11, 12 wrap -> 12 + 5, 12 + 0
    assert blocks[2].targets == [17, 12]


def test_unified_runs_draft_blocks_clean():
    v = execute(BLOCKS, "unified", "torch", EXECUTORS)
    assert not v.failed, [f.message for f in v.failures]
    obs = run_case(BLOCKS, target="unified", impl="torch")
    block = [f for f in obs.forwards if f.step == 2][0]
    assert block.pool == "draft" and block.mode == "TARGET_VERIFY" and block.rows == 4
    assert all(v == 0 for v in obs.steps[-1].mapping[:-1])  # M never written (R4)


@pytest.mark.parametrize("mutant,check", [
    ("ring_draft_block_via_mapping", "write_targets"),
    ("ring_draft_block_no_mod", "contracts"),
    ("ring_draft_block_seq_lens", "write_targets"),
    ("ring_draft_block_tiled_slots", "write_targets"),
])
def test_ring_draft_mutant_killed(mutant, check):
    assert load_all()[mutant].kinds == ("ring_draft",)
    v = execute(BLOCKS, f"mutant:{mutant}", "torch", EXECUTORS)
    assert v.failed
    assert check in {f.check for f in v.failures}, [f.message for f in v.failures]


def test_mutants_leave_cases_without_blocks_alone():
    no_blocks = Case(pool=BLOCKS.pool, graph=BLOCKS.graph,
                     steps=tuple(s for s in BLOCKS.steps if s.op != "draft_block"), kind="ring")
    for name in [n for n, m in load_all().items() if m.kinds == ("ring_draft",)]:
        v = execute(no_blocks, f"mutant:{name}", "torch", ["eager"])
        assert not v.failed, (name, [f.message for f in v.failures])


@pytest.mark.parametrize("kind", [k for k in features.kind_names() if k != "ring_draft"])
def test_other_kinds_never_generate_a_draft_block(kind):
    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data):
        case = data.draw(features.strategy(kind)())
        assert all(s.op != "draft_block" for s in case.steps)

    draw()


@settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(features.strategy("ring_draft")())
def test_ring_draft_kind_generates_valid_cases(case):
    gamma = case.graph.num_draft_tokens - 1
    assert gamma >= 1 and case.pool.swa_ring >= case.pool.window + gamma
    assert any(s.op == "draft_block" for s in case.steps)
    assert Case.loads(case.dumps()) == case
    v = execute(case, "unified", "torch", ["eager"])
    assert not v.failed, [f.message for f in v.failures]


# page size 4 > gamma 2: graph blocks allowed; buckets (1, 2, 4): a block of 3 pads to 4
GRAPH_BLOCKS = Case(
    pool=PoolConfig(page_size=4, full_pages=16, swa_pages=2, window=3, swa_ring=8, req_slots=4,
                    layers=1, draft_layers=2),
    graph=GraphConfig(buckets=(1, 2, 4), num_draft_tokens=3),
    steps=(Step("admit", rid=0, length=9), Step("admit", rid=1, length=2),
           Step("admit", rid=2, length=5), Step("draft_block", rids=(0, 1, 2), exec="graph"),
           Step("decode", rids=(0, 1, 2), exec="graph"),
           Step("draft_block", rids=(2, 0, 1), exec="graph"),
           Step("draft_block", rids=(1,), exec="graph"), Step("finish", rid=0),
           Step("draft_block", rids=(1, 2), exec="eager"),
           Step("draft_block", rids=(2, 1), exec="graph")),
    kind="ring_draft")


def test_unified_runs_graph_draft_blocks_clean():
    v = execute(GRAPH_BLOCKS, "unified", "torch", EXECUTORS)
    assert not v.failed, [f.message for f in v.failures]
    from swafuzz.harness.executors import get_executor

    obs = run_case(GRAPH_BLOCKS, target="unified", impl="torch", executor=get_executor("tape"))
    block = [f for f in obs.forwards if f.step == 3][0]
    assert block.exec == "graph" and block.rows == 4 * 2 and block.n_real == 6


@pytest.mark.parametrize("mutant", ["ring_draft_block_via_mapping", "ring_draft_block_seq_lens",
                                     "ring_draft_block_tiled_slots"])
def test_ring_draft_mutant_killed_in_graph(mutant):
    v = execute(GRAPH_BLOCKS, f"mutant:{mutant}", "torch", ["tape"])
    assert v.failed, mutant


def test_host_baked_block_killed_only_under_graphs():
    v = execute(GRAPH_BLOCKS, "mutant:ring_draft_block_host_baked", "torch", ["tape"])
    assert v.failed and "write_targets" in {f.check for f in v.failures}
    v = execute(GRAPH_BLOCKS, "mutant:ring_draft_block_host_baked", "torch", ["eager"])
    assert not v.failed, [f.message for f in v.failures]


def test_pad_fill_zero_killed_on_padded_rows():
    """The widened write_targets (``ForwardExp.pad_cycle``) fails on padded rows alone: here
    R = 8 > P = 4, so pool_bytes fires too; the message names a padded row."""
    v = execute(GRAPH_BLOCKS, "mutant:ring_draft_block_pad_fill_0", "torch", ["tape"])
    msgs = [f.message for f in v.failures if f.check == "write_targets"]
    assert msgs and "padded" in msgs[0], [f.message for f in v.failures]
    v = execute(GRAPH_BLOCKS, "mutant:ring_draft_block_pad_fill_0", "torch", ["eager"])
    assert not v.failed


def test_pad_fill_zero_seen_only_by_the_pad_cycle():
    """R == P: the padded rows' wrong row (R - 1) is in page 0, which pool_bytes never compares;
    only write_targets' padded-row expectation (``pad_cycle``) sees it."""
    case = Case(pool=PoolConfig(page_size=8, full_pages=8, swa_pages=1, window=3, swa_ring=8,
                                req_slots=2),
                graph=GraphConfig(buckets=(2,), num_draft_tokens=3),
                steps=(Step("admit", rid=0, length=5),
                       Step("draft_block", rids=(0,), exec="graph")), kind="ring_draft")
    assert not execute(case, "unified", "torch", ["tape"]).failed
    v = execute(case, "mutant:ring_draft_block_pad_fill_0", "torch", ["tape"])
    assert {f.check for f in v.failures} == {"write_targets"}, [f.message for f in v.failures]
