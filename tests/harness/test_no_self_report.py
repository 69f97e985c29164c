"""Issue 10: checks that cannot be fooled by what a target says about itself.

What: the two self-report experiments of the audit (an engine that never uses graphs; a DP rank
that never pads) are mutants killed by ``exec_path`` alone, on eager and tape; the path oracle
(``oracles.paths``) agrees with the engine oracle's row counts on every scenario kind and never
calls ``GraphConfig.bucket_for``; the harness (not the target) counts graph replays; the zoo's
single-check ablation read from one run equals rerunning with each check alone.
Reproduce: ``pytest tests/harness/test_no_self_report.py``.
"""

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.harness.pipeline.execute import execute
from swafuzz.harness.zoo.matrix import ablation
from swafuzz.oracles.engine import expect
from swafuzz.oracles.paths import bucket_of, expected_graph_use, expected_paths
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

CASE = Case(
    pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, window=4),
    graph=GraphConfig(buckets=(1, 2, 4)),
    steps=(Step("admit", rid=0, length=2), Step("admit", rid=1, length=1),
           Step("decode", rids=(0,), exec="graph"),
           Step("dp_decode", rids=(1,), rank_tokens=(3,), exec="eager"),
           Step("idle", tokens=3, exec="graph")),
    payload_seed=1, kind="decode")


def _fired(v):
    return sorted({f.check for f in v.failures})


@pytest.mark.parametrize("mutant", ["graph_less", "dp_never_pads"])
def test_self_report_experiments_killed_by_exec_path_alone(mutant):
    assert _fired(execute(CASE, "unified", "torch", ["eager", "tape"])) == []
    v = execute(CASE, f"mutant:{mutant}", "torch", ["eager", "tape"])
    assert _fired(v) == ["exec_path"], [f.message for f in v.failures]
    without = execute(CASE, f"mutant:{mutant}", "torch", ["eager", "tape"],
                      only=set(check_names()) - {"exec_path"})
    assert not without.failures, "another check sees it: the experiment would not be needed"


def test_eager_dp_never_pads_seen_on_the_eager_executor():
    v = execute(CASE, "mutant:dp_never_pads", "torch", ["eager"])
    (f,) = [f for f in v.failures if f.step == 3]
    assert "expected 3 (1 real + 2 padded" in f.message and "padded to 3 across ranks" in f.message


def test_graph_use_is_counted_by_the_harness():
    v = execute(CASE, "mutant:graph_less", "torch", ["tape"])
    msgs = [f.message for f in v.failures]
    assert any("ran eager, the Case determines graph (bucket 1" in m for m in msgs), msgs
    paths = expected_paths(CASE, True)
    assert expected_graph_use(paths) == (2, 2)  # decode bucket 1, idle bucket 4


def test_rows_misaligned_killed_by_pool_bytes_alone():
    v = execute(CASE, "mutant:rows_misaligned", "torch", ["eager", "tape"])
    assert _fired(v) == ["pool_bytes"]
    assert "step 0 fwd 0 target layer 0 row 1 (real" in v.failures[0].message


def test_ablation_read_from_one_run_equals_single_check_reruns():
    v = execute(CASE, "mutant:host_baked_translation", "torch", ["eager", "tape"])
    res = ablation(v, "mutant:host_baked_translation", "torch", ["eager", "tape"])
    for c in check_names():
        alone = execute(CASE, "mutant:host_baked_translation", "torch", ["eager", "tape"],
                        only={c})
        assert bool(alone.failures) == (c in res["alone"]), c
    assert res["sole"] is None and len(res["alone"]) > 1
    res = ablation(execute(CASE, "mutant:graph_less", "torch", ["tape"]), "mutant:graph_less",
                   "torch", ["tape"])
    assert res == {"alone": ["exec_path"], "sole": "exec_path", "leave_one_out": []}


def test_bucket_is_the_oracles_own():
    assert [bucket_of((1, 2, 4), n) for n in (0, 1, 2, 3, 4, 5)] == [1, 1, 2, 4, 4, None]
    import inspect

    import swafuzz.oracles.engine as eng
    import swafuzz.oracles.paths as paths
    import swafuzz.oracles.shadow as shadow

    for mod in (eng, shadow, paths):
        assert ".bucket_for(" not in inspect.getsource(mod), mod.__name__


@pytest.mark.parametrize("kind", sorted(features.kind_names()))
def test_paths_agree_with_the_engine_oracle(kind):
    """Two independent derivations of the row counts: the path oracle (no allocator) and the
    engine oracle's ForwardExp (rows_eager / rows_graph)."""

    @settings(max_examples=15, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        exp = expect(case)
        for graphs in (False, True):
            paths = expected_paths(case, graphs)
            assert [(p.step, p.fwd) for p in paths] == [(e.step, e.fwd) for e in exp.forwards]
            for p, e in zip(paths, exp.forwards):
                assert p.n_real == e.n_real and p.mode == e.mode
                if p.exec == "graph":
                    assert p.rows == e.rows_graph
                else:
                    assert p.rows == e.rows_eager
                assert p.exec == ("graph" if graphs and e.exec == "graph" else "eager")

    prop()


def test_capture_freeze_without_self_report():
    """host_baked_translation with its self-report removed is still attributed to capture."""
    from swafuzz.targets import register
    from swafuzz.targets.mutants import get

    base = get("host_baked_translation").engine

    class Silent(base.backend_cls):
        def translate_in_graph(self, loc):
            out = super().translate_in_graph(loc)
            self.baked = {}  # says nothing about what it baked
            return out

    class SilentEngine(base):
        backend_cls = Silent

    register("test:silent_host_baked", SilentEngine)
    v = execute(CASE, "test:silent_host_baked", "torch", ["eager", "tape"])
    cf = [f for f in v.failures if f.check == "capture_freeze"]
    assert cf and "recaptured" in cf[0].message and "frozen at capture" in cf[0].message


@pytest.mark.parametrize("mutant", ["pad_rows_not_zeroed", "draft_extend_buffer_ones"])
def test_capture_freeze_does_not_blame_capture_for_buffer_state(mutant):
    """Stale static buffers and capture-state writes are not values frozen at capture: the
    recaptured graph reproduces them, so capture_freeze stays silent."""
    case = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, window=8),
                graph=GraphConfig(buckets=(4,), num_draft_tokens=2),
                steps=(Step("admit", rid=0, length=2), Step("admit", rid=1, length=2),
                       Step("decode", rids=(0, 1), exec="graph"),
                       Step("decode", rids=(0,), exec="graph"),
                       Step("draft_extend", rids=(0,), accept=(1,), exec="graph"),
                       Step("draft_extend", rids=(1,), accept=(2,), exec="graph")),
                payload_seed=3, kind="decode")
    v = execute(case, f"mutant:{mutant}", "torch", ["eager", "tape"])
    assert v.failures and "capture_freeze" not in {f.check for f in v.failures}
