"""The ``sglang`` target.

Release detection, the real/modelled table and the refusal messages run in the normal CPU gate
(sglang absent or mocked). The adapter tests (marker ``upstream``) drive the installed SGLang
release and skip, with the reason, when sglang is not installed: run them in an environment
built by ``scripts/upstream-env VERSION`` (``tox -e upstream-0.5.23``).
"""

from __future__ import annotations

import importlib.util

import pytest
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

from swafuzz import targets
from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import TargetUnavailable
from swafuzz.targets import sglang as sg
from swafuzz.targets.sglang import matrix

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")


# ----------------------------------------------------------------------------- CPU gate
def test_registered_without_importing_sglang():
    assert "sglang" in targets.available_targets()
    assert targets.TARGETS["sglang"].allocation == "observed"


def test_release_detection(monkeypatch):
    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)
    monkeypatch.setattr(sg, "installed_version", lambda: None)
    with pytest.raises(TargetUnavailable, match=r"not installed .*0\.5\.12 \.\. 0\.5\.23"):
        sg.release()
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.23")
    assert sg.release() == ("0.5.23", "0.5.23")
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.17")  # in range: driven as itself
    assert sg.release() == ("0.5.17", "0.5.17")
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.24")
    with pytest.raises(TargetUnavailable, match="sglang 0.5.24 is outside the supported range "
                                                r"0\.5\.12 \.\. 0\.5\.23"):
        sg.release()
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.5.23")
    assert sg.release() == ("0.5.24", "0.5.23")
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.4.0")
    with pytest.raises(TargetUnavailable, match=f"{sg.ADAPTER_ENV}='0.4.0'"):
        sg.release()


def test_table_covers_every_component():
    text = matrix.table_text()
    for comp in ("ForwardMode", "allocator", "resolver", "store kernel", "graph runners"):
        assert comp in text
    assert all(a in ("real", "modelled", "absent") and b in ("real", "modelled", "absent")
               for _, a, b, _ in sg.TABLE)


def test_cli_list_target_sglang(capsys):
    assert cli_main(["list", "--target", "sglang"]) == 0
    out = capsys.readouterr().out
    assert "resolver get_swa_out_cache_loc" in out and "modelled" in out


@pytest.mark.skipif(HAVE_SGLANG, reason="sglang is installed here: the refusal is not reachable")
def test_cli_exits_2_without_sglang(capsys, tmp_path):
    assert cli_main(["run", "--target", "sglang", "--examples", "1",
                     "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "sglang package is not installed" in err and "0.5.12 .. 0.5.23" in err


def test_cli_exits_2_on_unsupported_release(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)
    monkeypatch.setattr(sg, "installed_version", lambda: "0.5.99")
    import sys

    monkeypatch.delitem(sys.modules, "swafuzz.targets.sglang.engine", raising=False)
    assert cli_main(["run", "--target", "sglang", "--examples", "1",
                     "--out", str(tmp_path)]) == 2
    assert "sglang 0.5.99 is outside the supported range 0.5.12 .. 0.5.23" in \
        capsys.readouterr().err


# ----------------------------------------------------------------------------- upstream
def _cases() -> list[Case]:
    g = GraphConfig(buckets=(1, 2, 4), topk=1, num_steps=3, num_draft_tokens=2)
    out = []
    for p in (1, 4):
        pool = PoolConfig(page_size=p, full_pages=24 // p * 2, swa_pages=20 // p * 2, window=3,
                          layers=2, draft_layers=1)
        out.append(Case(pool=pool, graph=g, kind="episode", steps=(
            Step("admit", rid=0, length=5), Step("admit", rid=1, length=2),
            Step("decode", rids=(0, 1), exec="graph"), Step("verify", rids=(1,), exec="graph"),
            Step("draft_extend", rids=(1, 0), accept=(2, 1), exec="graph"),
            Step("draft_decode", rids=(0,), exec="graph"), Step("idle", tokens=3, exec="graph"),
            Step("evict", rid=0), Step("finish", rid=1), Step("admit", rid=2, length=3),
            Step("dp_decode", rids=(2,), rank_tokens=(3,)), Step("decode", rids=(2, 0)),
            Step("draft_decode", rids=(2, 0)), Step("idle", tokens=2))))
    return out


@pytest.mark.upstream
@needs_sglang
@pytest.mark.parametrize("i", [0, 1], ids=["page1", "page4"])
def test_real_code_passes_every_check(i):
    from swafuzz.harness.pipeline.execute import execute

    v = execute(_cases()[i], "sglang", "torch", ["eager", "tape"])
    assert not v.failed, [f.message for f in v.failures]


@pytest.mark.upstream
@needs_sglang
def test_observation_records_release_and_allocations():
    from swafuzz.targets.sglang import engine, real

    case = _cases()[0]
    obs = engine.SGLangEngine(case, impl="torch").run()
    assert obs.error is None, obs.error
    assert obs.target_version.startswith(f"sglang {real.VERSION}")
    assert all(s.alloc is not None for s in obs.steps)
    # page size 1: after finish(1), admit(2) does not take the lowest free slots (SGLang keeps
    # released slots aside until its free list runs short): the oracle must follow its choices
    assert [f for f, _ in obs.steps[9].alloc] != obs.steps[8].free_full_pages[:3]


@pytest.mark.upstream
@needs_sglang
def test_the_store_locations_come_from_sglang(monkeypatch):
    """Break the release's translation: the harness must see it (so the target really runs the
    release's code, not the model's)."""
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine

    real = engine.RealPool.translate_loc_from_full_to_swa

    def off_by_one(self, loc):
        return real(self, loc) + 1

    monkeypatch.setattr(engine.RealPool, "translate_loc_from_full_to_swa", off_by_one)
    v = execute(_cases()[0], "sglang", "torch", ["eager"])
    assert v.failed


@pytest.mark.upstream
@needs_sglang
def test_the_resolver_comes_from_sglang(monkeypatch):
    """0.5.23: a resolver that ignores its IDLE guard (the PR #15227 class) is caught on the
    real backend class; 0.5.12 has no resolver (skip)."""
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine, real

    if not engine.UNIFIED_RESOLVER:
        pytest.skip(f"sglang {real.VERSION} has no get_swa_out_cache_loc")

    def always_cached(self, fb):
        core = getattr(self.forward_metadata, "core_attn_metadata", None)
        cached = core.swa_out_cache_loc if core is not None else None
        if cached is not None and cached.shape[0] == fb.out_cache_loc.shape[0]:
            return cached
        return self.token_to_kv_pool.translate_loc_from_full_to_swa(fb.out_cache_loc).to(
            engine.torch.int32)

    monkeypatch.setattr(engine.RealBackend, "get_swa_out_cache_loc", always_cached)
    case = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8),
                graph=GraphConfig(buckets=(1, 2, 4), topk=1, num_steps=2),
                steps=(Step("admit", rid=0, length=2), Step("decode", rids=(0,)),
                       Step("idle", tokens=1)), kind="idle")
    v = execute(case, "sglang", "torch", ["eager"])
    assert v.failed and v.failures[0].check in ("write_targets", "pool_bytes", "write_set")


@pytest.mark.upstream
@needs_sglang
def test_0_5_12_layer_cache_runs_for_real(monkeypatch):
    """0.5.12: the pool's cached translation is recomputed at its ``start_layer``. Give the
    real pool objects a start_layer no layer has (a stage whose first storing layer is not
    start_layer, spec §9.7): the cache is computed once and reused stale, which the harness
    catches (here: the stale 2-row translation reaches the 1-row decode store, refused by the
    store contract); with the true start_layer such Cases pass (tests above)."""
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.sglang import engine, real

    if engine.UNIFIED_RESOLVER:
        pytest.skip(f"sglang {real.VERSION} has no layer-keyed cached translation")
    build = engine.build_real_pool

    def shifted(owner):
        p = build(owner)
        p.start_layer = -1
        return p

    monkeypatch.setattr(engine, "build_real_pool", shifted)
    case = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8),
                steps=(Step("admit", rid=0, length=2), Step("decode", rids=(0,))), kind="decode")
    v = execute(case, "sglang", "torch", ["eager"])
    assert v.failed and v.failures[0].check in ("write_targets", "pool_bytes", "contracts")


def test_upstream_env_refuses_an_unsupported_release():
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(["bash", os.path.join(root, "scripts", "upstream-env"), "0.4.0"],
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 2
    assert "sglang 0.4.0 is outside the supported range 0.5.12 .. 0.5.23" in r.stderr
