"""The ``sglang`` target across releases 0.5.12 .. 0.5.23 (release-matrix): the release-range
logic and the per-release table (CPU gate: no sglang needed, the installed version is
monkeypatched) and, where a release is installed, its feature detection and the two upstream
findings of 0.5.21 / 0.5.22 (marker ``upstream``; skipped without sglang or on a release
without the feature).

Reproduce on a release: ``$(scripts/upstream-env 0.5.21) -m
pytest tests/targets/test_sglang_releases.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.targets import TargetUnavailable
from swafuzz.targets import sglang as sg

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)

    def set_version(v):
        monkeypatch.setattr(sg, "installed_version", lambda: v)
    return set_version


# ----------------------------------------------------------------------------- CPU gate
@pytest.mark.parametrize("v, key", [("0.5.21", (0, 5, 21)), ("0.5.21.post1", (0, 5, 21)),
                                    ("0.5.22rc1", (0, 5, 22)), ("0.5.23.dev3+g12ab", (0, 5, 23)),
                                    ("0.10.0", (0, 10, 0))])
def test_version_key(v, key):
    assert sg.version_key(v) == key


@pytest.mark.parametrize("v", ["0.5", "dev", ""])
def test_version_key_refuses_non_releases(v):
    with pytest.raises(ValueError, match="not a release version"):
        sg.version_key(v)
    assert not sg.in_range(v)


@pytest.mark.parametrize("v", ["0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14",
                               "0.5.15.post1", "0.5.17", "0.5.20", "0.5.23", "0.5.23rc1"])
def test_every_release_in_range_runs_as_itself(installed, v):
    """No nearest-number adapter: a release (post-releases included) is driven as itself."""
    installed(v)
    assert sg.release() == (v, v)
    assert sg.in_range(v)


FAKE = {"0.5.12": {"family": "store-path", "found": {}, "check": "passed"},
        "0.5.13": {"family": "resolver", "found": {
            "paged allocator CPU switch (use_triton_kernels)": "no",
            "SWATokenToKVPoolAllocator.free_full": "no",
            "SWA allocator module": "sglang.srt.mem_cache.allocator.swa",
            "per_step_draft_out_cache_loc": "yes",
            "draft-extend prep (_fill_cuda_graph_swa_out_cache_loc)": "no",
            "V4 fused store module": "sglang.jit_kernel.triton_store_cache"}, "check": "passed"},
        "0.5.23": {"family": "resolver", "found": {
            "paged allocator CPU switch (use_triton_kernels)": "yes",
            "SWATokenToKVPoolAllocator.free_full": "yes",
            "SWA allocator module": "sglang.srt.mem_cache.allocator.swa",
            "per_step_draft_out_cache_loc": "yes",
            "draft-extend prep (_fill_cuda_graph_swa_out_cache_loc)": "yes",
            "V4 fused store module": "sglang.kernels.ops.kvcache.triton_store_cache"},
            "check": "passed"}}


@pytest.fixture
def detected(monkeypatch):
    monkeypatch.setattr(sg, "DETECTED", FAKE)
    return FAKE


def test_labels_come_from_the_detected_family(detected, installed, monkeypatch):
    """0.5.13 is the resolver family (its probe says so), whatever release is numerically
    nearest; a post-release without a probe of its own answers as its release."""
    from swafuzz.targets.sglang.target import TARGET

    assert sg.label("0.5.13") == "0.5.13 (resolver family)"
    assert sg.label("0.5.12") == "0.5.12 (store-path family)"
    assert sg.label("0.5.13.post1") == "0.5.13.post1 (resolver family)"
    assert sg.label("0.5.17") == "0.5.17 (family not recorded)"
    assert sg.label("0.5.30", "0.5.23") == "0.5.30 (adapter 0.5.23, resolver family)"
    installed("0.5.13")
    assert TARGET.versions() == {"sglang": "0.5.13 (resolver family)"}


def test_per_release_rows_are_generated_from_detection(detected):
    """Where a release's probe is recorded, the allocator, per-step, draft-extend prep and V4
    store rows say what it found (0.5.17-0.5.19 were wrong when inferred from the ends)."""
    from swafuzz.targets.sglang import matrix

    ans, why = matrix.answer("allocator (alloc, alloc_extend, alloc_decode, free, free_swa, "
                             "free_full)", "0.5.13")
    assert ans == "real" and "no free_full" in why and "no use_triton_kernels" in why
    prep = next(c for c, *_ in sg.TABLE if c.startswith("draft-extend metadata prep"))
    assert matrix.answer(prep, "0.5.13")[0] == "modelled"
    assert matrix.answer(prep, "0.5.13.post1")[0] == "modelled"  # its release's probe
    assert matrix.answer(prep, "0.5.23") == ("real", "")
    store = next(c for c, *_ in sg.TABLE if c.startswith("store kernel, pool layout dsv4"))
    assert "sglang.jit_kernel.triton_store_cache" in matrix.answer(store, "0.5.13")[1]
    assert matrix.answer(store, "0.5.23") == ("real", "")
    assert matrix.answer(prep, "0.5.21")[0] == "real"  # no probe recorded: the ranges


@pytest.mark.parametrize("v", ["0.5.11", "0.5.24", "0.6.0", "0.4.9"])
def test_outside_the_range_is_refused_naming_it(installed, v):
    installed(v)
    with pytest.raises(TargetUnavailable, match=f"sglang {v} is outside the supported range "
                                                r"0\.5\.12 \.\. 0\.5\.23; set "):
        sg.release()


def test_forced_adapter_outside_the_range(installed, monkeypatch):
    installed("0.5.30")
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.5.23")
    assert sg.release() == ("0.5.30", "0.5.23")
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.5.9")  # not a release of the range: refused
    with pytest.raises(TargetUnavailable, match="not a release of the supported range"):
        sg.release()


def test_unsupported_kinds_follow_the_installed_release(installed):
    from swafuzz.targets.sglang.target import TARGET

    def refused(kinds):
        return [k for k in kinds if TARGET.supports(k)]

    installed("0.5.19")  # the kinds are those of 0.5.19 itself
    assert set(refused(["ring", "request_window", "late_tail", "decode"])) == {
        "ring", "request_window", "late_tail"}
    installed("0.5.22")
    assert refused(["ring", "request_window", "encoder_replay", "decode"]) == [
        "ring", "encoder_replay"]
    installed("0.5.23")
    assert refused(["ring", "request_window", "decode"]) == []


def test_cli_exit_2_outside_the_range(installed, capsys, tmp_path, monkeypatch):
    installed("0.5.24")
    monkeypatch.delitem(sys.modules, "swafuzz.targets.sglang.engine", raising=False)
    assert cli_main(["run", "--target", "sglang", "--examples", "1",
                     "--out", str(tmp_path / "o")]) == 2
    assert "outside the supported range 0.5.12 .. 0.5.23" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_per_release_table():
    from swafuzz.targets.sglang import matrix

    assert matrix.answer("resolver get_swa_out_cache_loc", "0.5.12")[0] == "absent"
    assert matrix.answer("resolver get_swa_out_cache_loc", "0.5.16") == (
        "real", "C and F only (addendum §3)")
    assert "W tested before any IDLE" in matrix.answer("resolver get_swa_out_cache_loc",
                                                       "0.5.21")[1]
    assert matrix.answer("resolver get_swa_out_cache_loc", "0.5.23") == ("real", "")
    assert matrix.answer("DSV4 pool: layer-keyed cached_loc", "0.5.20")[0] == "absent"
    assert matrix.answer("ForwardMode", "0.5.18")[0] == "real"  # same in every release
    for v in ("0.5.12", "0.5.16", "0.5.21", "0.5.23"):
        for comp, *_ in sg.TABLE:  # every row answers for every release
            assert matrix.answer(comp, v)[0] in ("real", "modelled", "absent", "refused")
    with pytest.raises(ValueError, match="outside the supported range"):
        matrix.answer("ForwardMode", "0.5.24")
    assert matrix.main(["0.5.24"]) == 2


def test_matrix_keys_name_table_rows():
    """Every per-release range names a TABLE row (a renamed row would silently lose them)."""
    from swafuzz.targets.sglang import matrix

    for key in matrix.RANGES:
        assert any(c.startswith(key) for c, *_ in sg.TABLE), key


@pytest.mark.parametrize("v", ["0.5.11", "0.5.24", "0.4.0", "0.5.24.post1", "0.5.11.post2"])
def test_upstream_env_refuses_outside_the_range(v):
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "upstream-env"), v],
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 2
    assert f"sglang {v} is outside the supported range 0.5.12 .. 0.5.23" in r.stderr


@pytest.mark.parametrize("v", ["x", "0.5", "0.5.13rc1", "0.5.13.post"])
def test_upstream_env_refuses_what_is_not_a_release(v):
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "upstream-env"), v],
                       capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 2
    assert f"{v} is not a release (X.Y.Z) or post-release (X.Y.Z.postN)" in r.stderr


# ----------------------------------------------------------------------------- upstream
@pytest.mark.upstream
@needs_sglang
def test_features_pick_the_family_by_what_the_release_has():
    from swafuzz.targets.sglang import engine, features

    assert features.FAMILY == ("resolver" if hasattr(features.RealBackend,
                                                     "get_swa_out_cache_loc") else "store-path")
    assert engine.STORE_PATH == (features.FAMILY == "store-path")
    rows = dict(features.describe())
    assert rows["adapter family"] == features.FAMILY
    v, adapter = sg.release()
    assert engine.TARGET_VERSION == (f"sglang {v}" if v == adapter
                                     else f"sglang {v} (adapter {adapter})")


@pytest.mark.upstream
@needs_sglang
def test_refusals_name_what_is_missing():
    """A ring Case on a release without ring write rows: TargetUnavailable naming the missing
    attribute (not a version)."""
    from swafuzz.scenarios.case import Case, PoolConfig, Step
    from swafuzz.targets.sglang import features
    from swafuzz.targets.sglang.engine import SGLangEngine

    if not features.RING_MISSING:
        pytest.skip("this release has the ring")
    case = Case(pool=PoolConfig(page_size=2, full_pages=8, swa_pages=8, swa_ring=4),
                steps=(Step("admit", rid=0, length=3),), kind="ring")
    with pytest.raises(TargetUnavailable, match=features.RING_MISSING[0].split(" ")[0]):
        SGLangEngine(case)


@pytest.mark.upstream
@needs_sglang
def test_unfolded_replay_is_refused():
    """0.5.21 / 0.5.22 have the request window but replay in a forward of their own: a Case
    with ``extend(replay=...)`` (the 0.5.23 fold) is refused naming the fold."""
    from swafuzz.targets.sglang import features
    from swafuzz.targets.sglang.engine import SGLangEngine
    from tests.features.request_window.test_window import HAND

    if features.WINDOW_MISSING or features.FOLD:
        pytest.skip("needs a request window without the fold (0.5.21, 0.5.22)")
    with pytest.raises(TargetUnavailable, match="fold_encoder_swa_replay"):
        SGLangEngine(HAND["replay"]).run()


def _a2_release() -> bool:
    from swafuzz.targets.sglang import features

    return not features.WINDOW_MISSING and not features.WINDOW_IDLE


@pytest.mark.upstream
@needs_sglang
def test_a2_window_branch_before_idle():
    """Addendum A2 on 0.5.21 / 0.5.22 (no resolver branch I): an eager IDLE forward with MTP
    (topk set: its metadata init is skipped) on a request-window pool re-activates the
    previous forward's layout; its write_loc has that forward's row count, so the IDLE
    store gets the wrong number of workspace rows (the ledger's
    ``a2-window-before-idle``). 0.5.23 passes the same Case
    (test_sglang_window.py::test_real_window_code_passes_hand_cases[window])."""
    if not _a2_release():
        pytest.skip("needs a request window without resolver branch I (0.5.21, 0.5.22)")
    from swafuzz.harness.pipeline.execute import execute
    from tests.features.request_window.test_window import HAND

    v = execute(HAND["window"], "sglang", "torch", ["eager"])
    assert v.failures and v.failures[0].check == "window"
    assert "(IDLE, window path)" in v.failures[0].message


def _short_tail_floor_release() -> bool:
    """The installed tail layout floors a tail shorter than W at seq_len - tail_len (0.5.21,
    0.5.22) instead of seq_len - W (0.5.23)."""
    from swafuzz.targets.sglang import features

    if features.WINDOW_MISSING:
        return False
    _, _, floor = features.tail_mod.late_layer_tail_layout(
        extend_lens_cpu=[1], seq_lens_cpu=[8], tail_len=4, device="cpu")
    return floor.tolist() == [7]


@pytest.mark.upstream
@needs_sglang
def test_short_tail_floor():
    """0.5.21 / 0.5.22: ``late_layer_tail_layout`` gives a tail shorter than W the floor
    seq_len - tail_len, so the late layers' window of a short extend excludes the request's
    earlier rows (0.5.23: seq_len - W, its docstring: such a tail reads rows written before
    the extend). On the hand Case ``tail_window`` (rid 0: 7 tokens, then a 1-token extend,
    W 4): the late layer's workspace history rows are the zero row instead of positions 4-6
    (the ledger's ``short-tail-floor``)."""
    if not _short_tail_floor_release():
        pytest.skip("needs the 0.5.21 / 0.5.22 tail floor")
    from swafuzz.harness.pipeline.execute import execute
    from tests.features.request_window.test_window import HAND

    v = execute(HAND["tail_window"], "sglang", "torch", ["eager"])
    assert v.failures and v.failures[0].check == "window"
    assert "(EXTEND, window path) layer 1" in v.failures[0].message
    assert "history row" in v.failures[0].message


# ----------------------------------------------------------------------------- release matrix
def test_matrix_records_make_the_table_and_the_detection_module(tmp_path):
    """scripts/upstream-matrix's bookkeeping: a record per release from its probe and its
    campaign directory, the Markdown table, the generated detected.py (no sglang needed)."""

    from swafuzz.targets.sglang import releases

    run = tmp_path / "run"
    (run / "findings").mkdir(parents=True)
    (run / "cases.jsonl").write_text("\n".join(json.dumps({"phase": p}) for p in
                                               ("generate", "generate", "shrink")) + "\n")
    (run / "findings" / "a.json").write_text("{}")
    (run / "findings" / "x.known-entry.json").write_text("{}")
    ok = tmp_path / "ok.probe.json"
    ok.write_text(json.dumps({"ok": True, "version": "0.5.13.post1", "family": "resolver",
                              "found": {"adapter family": "resolver"}}))
    bad = tmp_path / "bad.probe.json"
    bad.write_text(json.dumps({"ok": False, "version": "0.5.15", "cause": "no cutlass",
                               "advice": "add it"}))
    recs = tmp_path / "m"
    recs.mkdir()
    assert releases.main(["record", str(recs / "0.5.13.post1.json"), "--release", "0.5.13.post1",
                          "--build", "ok", "--check", "passed", "--probe", str(ok),
                          "--run", str(run), "--seconds", "7"]) == 0
    assert releases.main(["record", str(recs / "0.5.15.json"), "--release", "0.5.15",
                          "--build", "probe-failed", "--check", "skipped", "--probe", str(bad),
                          "--run", str(tmp_path / "none"), "--seconds", "3"]) == 0
    loaded = releases.load(str(recs))
    assert [r["release"] for r in loaded] == ["0.5.13.post1", "0.5.15"]
    text = releases.table(loaded)
    assert "| 0.5.13.post1 | ok | resolver | passed | 2 | 1 new, 1 known | 7 |" in text
    assert "| 0.5.15 | probe failed: no cutlass | - | skipped | - | - | 3 |" in text
    found = json.loads(releases.detected_module(loaded))
    assert found["0.5.13.post1"] == {"family": "resolver", "check": "passed",
                                     "found": {"adapter family": "resolver"}}
    assert found["0.5.15"]["family"] is None
    assert releases.main(["table", str(tmp_path / "nope")]) == 2
    assert releases.release_key("0.5.13.post1") > releases.release_key("0.5.13")


@pytest.mark.skipif(HAVE_SGLANG, reason="the probe of an environment without sglang")
def test_probe_without_sglang_names_the_cause(capsys):

    from swafuzz.targets.sglang import detect

    assert detect.main([]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["cause"] == "sglang is not installed"
    assert "upstream-env" in out["advice"]
    assert detect.main(["--bogus"]) == 2


def test_probe_advice_is_not_the_same_command():
    from swafuzz.targets.sglang import detect

    for missing in ("cutlass", "flashinfer", "zmq", None):
        advice = detect.advice_for("0.5.15", missing)
        assert "scripts/upstream-env 0.5.15" not in advice, advice
    assert "nvidia-cutlass-dsl" in detect.advice_for("0.5.15", "cutlass.cute")
    assert "CUDA-only" in detect.advice_for("0.5.15", "flashinfer")


def test_status_table_is_written_and_checked_from_the_records(tmp_path):
    from swafuzz.targets.sglang import releases

    recs = [{"release": "0.5.14", "build": "ok", "check": "passed", "family": "resolver",
             "cases": 30, "findings": 0, "seconds": 200}]
    doc = tmp_path / "STATUS.md"
    doc.write_text(f"# s\n\n{releases.BEGIN}\nold\n{releases.END}\nrest\n")
    assert releases.status(recs, str(doc), check=True) == 1  # stale: caught
    assert releases.status(recs, str(doc), check=False) == 0
    assert "| 0.5.14 | ok | resolver | passed | 30 | 0 | 200 |" in doc.read_text()
    assert doc.read_text().endswith(f"{releases.END}\nrest\n")
    assert releases.status(recs, str(doc), check=True) == 0
    (tmp_path / "bare.md").write_text("no markers\n")
    assert releases.status(recs, str(tmp_path / "bare.md"), check=True) == 2
