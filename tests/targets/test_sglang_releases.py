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
import os
import subprocess
import sys

import pytest

from swafuzz.harness.cli import main as cli_main
from swafuzz.targets import TargetUnavailable
from swafuzz.targets import sglang as sg

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="sglang is not installed (build an "
                                  "environment with scripts/upstream-env VERSION)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(__file__))


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


@pytest.mark.parametrize("v, adapter", [
    ("0.5.12", "0.5.12"), ("0.5.13", "0.5.12"), ("0.5.14", "0.5.16"),  # tie: the newer
    ("0.5.15", "0.5.16"), ("0.5.17", "0.5.16"), ("0.5.18", "0.5.20"), ("0.5.19", "0.5.20"),
    ("0.5.20", "0.5.20"), ("0.5.21", "0.5.21"), ("0.5.22", "0.5.22"), ("0.5.23", "0.5.23"),
    ("0.5.21.post1", "0.5.21"), ("0.5.23rc1", "0.5.23")])
def test_every_release_in_range_gets_the_nearest_verified_adapter(installed, v, adapter):
    installed(v)
    assert sg.release() == (v, adapter)
    assert sg.in_range(v)


@pytest.mark.parametrize("v", ["0.5.11", "0.5.24", "0.6.0", "0.4.9"])
def test_outside_the_range_is_refused_naming_it(installed, v):
    installed(v)
    with pytest.raises(TargetUnavailable, match=f"sglang {v} is outside the supported range "
                                                r"0\.5\.12 \.\. 0\.5\.23 \(verified: 0\.5\.12, "):
        sg.release()


def test_forced_adapter_outside_the_range(installed, monkeypatch):
    installed("0.5.30")
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.5.23")
    assert sg.release() == ("0.5.30", "0.5.23")
    monkeypatch.setenv(sg.ADAPTER_ENV, "0.5.17")  # not verified: refused, naming the choices
    with pytest.raises(TargetUnavailable, match="not a verified release; choose one of: 0.5.12"):
        sg.release()


def test_unsupported_kinds_follow_the_installed_release(installed):
    from swafuzz.targets.sglang.target import TARGET

    def refused(kinds):
        return [k for k in kinds if TARGET.supports(k)]

    installed("0.5.19")  # nearest verified 0.5.20: the kinds are those of 0.5.19 itself
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


@pytest.mark.parametrize("v", ["0.5.11", "0.5.24", "0.4.0", "x"])
def test_upstream_env_refuses_outside_the_range(v):
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "upstream-env"), v],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert f"sglang {v} is outside the supported range 0.5.12 .. 0.5.23" in r.stderr


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
    from test_window import HAND

    from swafuzz.targets.sglang import features
    from swafuzz.targets.sglang.engine import SGLangEngine

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
    from test_window import HAND

    from swafuzz.harness.run import execute

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
    from test_window import HAND

    from swafuzz.harness.run import execute

    v = execute(HAND["tail_window"], "sglang", "torch", ["eager"])
    assert v.failures and v.failures[0].check == "window"
    assert "(EXTEND, window path) layer 1" in v.failures[0].message
    assert "history row" in v.failures[0].message
