"""One support question, asked of every target: ``targets.supports(name, subject)``, over every
feature record and scenario kind (OpInfo-style: the records drive the parametrisation).

* ``unified`` (and the bug zoo) support everything;
* ``sglang`` answers from the records' ``since["sglang"]`` and the installed release, faked here
  (``installed_version`` monkeypatched: no sglang is needed or imported): a kind whose record
  says ``since`` X is refused below X with a reason naming the kind and the release, accepted at
  X; a kind no release drives (``release=None``) is always refused;
* the CLI: ``run --scenario K`` refused (exit 2, the reason), left out of the default set with a
  note, ``repro`` of a Case the release cannot run refused, ``list --features`` prints the table.

Reproduce: ``pytest tests/features/test_support.py``.
"""

from __future__ import annotations

import ast
import json
import os

import pytest

from swafuzz import features, targets
from swafuzz.features import Since
from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.scenarios.case import Case, PoolConfig, Step
from swafuzz.targets import sglang as sg
from swafuzz.targets.mutants import load_all
from swafuzz.targets.sglang.target import TARGET, releases, supports_at

FEATURES = features.all_features()
KINDS = [(f, k) for f in FEATURES for k in f.kind_names()]
KIND_IDS = [k for _, k in KINDS]
#: the kinds the records let sglang refuse somewhere: (feature, kind, Since)
SINCE = [(f, k, f.since_for("sglang", k)) for f, k in KINDS if f.since_for("sglang", k)]


def _previous(release: str) -> str:
    a, b, c = sg.version_key(release)
    return f"{a}.{b}.{c - 1}"


@pytest.fixture
def installed(monkeypatch):
    """Fake the installed sglang release (None: not installed); no adapter forced."""
    monkeypatch.delenv(sg.ADAPTER_ENV, raising=False)

    def set_version(v):
        monkeypatch.setattr(sg, "installed_version", lambda: v)
    return set_version


# ----------------------------------------------------------------------------- every target
@pytest.mark.parametrize("target", ["unified", "mutant:pad_rows_not_zeroed"])
def test_engine_model_targets_support_everything(target):
    for f in FEATURES:
        assert targets.supports(target, f) is None, f.name
        for k in f.kind_names():
            assert targets.supports(target, k) is None, k


def test_a_target_without_the_hook_supports_everything():
    def factory(case, **kw):  # pragma: no cover - never built
        raise AssertionError

    targets.register("support-test-plain", factory)
    try:
        assert targets.supports("support-test-plain", "ring") is None
        assert targets.versions("support-test-plain") == {}
        assert targets.version("support-test-plain") is None
        assert "support-test-plain" in targets.describe("support-test-plain")
    finally:
        targets.TARGETS.pop("support-test-plain", None)


def test_the_records_say_when_sglang_refuses():
    """The facts formerly hand-listed in targets.sglang (KIND_FIRST_RELEASE, KINDS_NOT_DRIVEN)."""
    first = {k: s.release for _, k, s in SINCE}
    assert first == {
        "ring": "0.5.23", "request_window": "0.5.21", "late_tail": "0.5.21",
        "encoder_replay": "0.5.23", "replay_tail": "0.5.23", "replay_separate": "0.5.23",
        "window_graphs": "0.5.23", "prefill_graphs": "0.5.23", "tail_prefix": "0.5.23",
        "tail_graphs": "0.5.23", "dspark_verify": "0.5.21", "dspark_verify_graph": None,
        "window_dp_extend": "0.5.23", "ring_draft": "0.5.23"}


# ----------------------------------------------------------------------------- sglang, per kind
@pytest.mark.parametrize("feat, kind, since", SINCE, ids=[k for _, k, _ in SINCE])
def test_sglang_refuses_below_since_and_accepts_at_it(installed, feat, kind, since):
    if since.release is None:
        for r in releases():
            installed(r)
            why = targets.supports("sglang", kind)
            assert why and kind in why and "any release" in why and since.why in why
        return
    installed(_previous(since.release))
    why = targets.supports("sglang", kind)
    assert why is not None
    assert f"scenario kind {kind} (feature {feat.name})" in why
    assert f"sglang {_previous(since.release)}" in why and since.why in why
    assert f"(first in {since.release})" in why
    installed(since.release)
    assert targets.supports("sglang", kind) is None
    assert supports_at(kind, since.release) is None
    assert supports_at(kind, _previous(since.release)) is not None


@pytest.mark.parametrize("feat, kind", [(f, k) for f, k in KINDS
                                        if f.since_for("sglang", k) is None],
                         ids=[k for f, k in KINDS if f.since_for("sglang", k) is None])
def test_sglang_runs_kinds_without_since_on_every_release(installed, feat, kind):
    for r in releases():
        assert supports_at(kind, r) is None
    installed(sg.SUPPORTED_RANGE[0])
    assert targets.supports("sglang", kind) is None


@pytest.mark.parametrize("feat", FEATURES, ids=[f.name for f in FEATURES])
def test_sglang_feature_answer_follows_its_kinds(feat):
    for r in releases():
        kinds = [supports_at(k, r) for k in feat.kind_names()]
        why = supports_at(feat, r)
        assert (why is None) == (not all(kinds)), (feat.name, r)
        if why:
            assert f"feature {feat.name}" in why


def test_sglang_between_verified_releases_answers_for_itself(installed):
    installed("0.5.19")  # driven as itself (no nearest-number adapter): its own records' answer
    why = targets.supports("sglang", "request_window")
    assert "sglang 0.5.19 has no request window (first in 0.5.21)" in why


def test_sglang_unavailable_refuses_with_why(installed):
    installed(None)
    assert "not installed" in targets.supports("sglang", "decode")
    installed("0.5.99")
    assert "outside the supported range" in targets.supports("sglang", "decode")


def test_sglang_refuses_a_case_by_its_kind_or_fields(installed):
    installed("0.5.12")
    ring = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, swa_ring=4, req_slots=2),
                steps=(Step("admit", rid=0, length=3),))  # kind "custom": its fields decide
    why = targets.supports("sglang", ring)
    assert "feature ring (used by the Case)" in why and "(first in 0.5.23)" in why
    assert "scenario kind ring" in targets.supports("sglang", Case(
        pool=ring.pool, steps=ring.steps, kind="ring"))
    assert targets.supports("unified", ring) is None


def test_supports_rejects_other_subjects():
    with pytest.raises(TypeError, match="a Feature, a scenario kind or a Case"):
        supports_at(3, "0.5.23")
    with pytest.raises(KeyError, match="known kinds"):
        supports_at("no_such_kind", "0.5.23")


def test_since_none_is_never_driven():
    s = Since(None, "nothing drives it")
    f = features.Feature("x", "t", "s", (features.Kind(
        "x_kind", "swafuzz.features.dense.kinds:decode_cases", "s", since={"sglang": s}),))
    for r in releases():
        assert "nothing drives it" in supports_at(f, r)


# ----------------------------------------------------------------------------- CLI
@pytest.fixture
def sglang_here(installed, monkeypatch):
    """A faked installed release whose adapter counts as importable (check_available)."""
    monkeypatch.setattr(type(TARGET), "check_available", staticmethod(lambda: None))
    return installed


def test_cli_run_refuses_an_unsupported_kind(sglang_here, tmp_path, capsys):
    sglang_here("0.5.12")
    rc = cli_main(["run", "--target", "sglang", "--scenario", "ring", "--examples", "1",
                   "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--scenario ring: target sglang cannot run it: scenario kind ring (feature ring): " \
           "sglang 0.5.12 has no per-request SWA ring" in err and "(first in 0.5.23)" in err
    assert not (tmp_path / "o").exists()
    sglang_here("0.5.23")
    rc = cli_main(["run", "--target", "sglang", "--scenario", "dspark_verify_graph",
                   "--examples", "1", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2 and "does not drive scenario kind dspark_verify_graph" in \
        capsys.readouterr().err


def test_cli_default_kinds_leave_unsupported_ones_out(sglang_here, monkeypatch, capsys):
    from swafuzz.harness.cli.common import check_target_kinds

    sglang_here("0.5.21")
    kinds = check_target_kinds(["unified", "sglang"], list(features.kind_names()), False)
    err = capsys.readouterr().err
    refused = [k for k in features.kind_names() if supports_at(k, "0.5.21")]
    assert refused and not set(refused) & set(kinds)
    assert "request_window" in kinds and "decode" in kinds
    assert err.startswith("note: scenario kinds ") and "left out for target sglang" in err


def test_cli_repro_refuses_a_case_the_release_cannot_run(sglang_here, tmp_path, capsys):
    from swafuzz.checks.runner import Failure
    from swafuzz.harness.pipeline.execute import Verdict
    from swafuzz.reports.bundle import write_bundle

    sglang_here("0.5.20")
    case = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, swa_ring=4, req_slots=2),
                steps=(Step("admit", rid=0, length=3),), kind="ring")
    path = write_bundle(str(tmp_path), Verdict(case, [Failure("write_targets", "m", "decode")],
                                               1, 0.0).finding("sglang", "torch", "eager"))
    assert cli_main(["repro", path]) == 2
    err = capsys.readouterr().err
    assert "target sglang cannot run this Case: scenario kind ring" in err
    assert "sglang 0.5.20" in err


def test_cli_list_features(installed, capsys):
    installed("0.5.23")
    assert cli_main(["list", "--features"]) == 0
    out = capsys.readouterr().out
    for f in FEATURES:
        assert f.name in out
    assert "target sglang per release (0.5.12 .. 0.5.23" in out
    assert "why '-':" in out and "(first in 0.5.21)" in out
    assert cli_main(["list", "--features", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["releases"]["sglang"] == list(releases())
    rows = {k["name"]: k for f in data["features"] for k in f["kinds"]}
    assert set(rows) == set(features.kind_names()) | set(features.kind_names("server"))
    assert rows["server_dp"]["level"] == "server" and rows["ring"]["level"] == "component"
    assert rows["ring"]["releases"]["sglang"]["0.5.22"] and \
        rows["ring"]["releases"]["sglang"]["0.5.23"] is None
    assert rows["ring"]["support"]["sglang"] is None and rows["ring"]["support"]["unified"] is None
    assert sum(f["mutants"] for f in data["features"]) == len(load_all())
    assert cli_main(["list", "--json"]) == 2


def test_cli_list_target_uses_the_describe_hook(installed, capsys):
    installed("0.5.23")
    assert cli_main(["list", "--target", "sglang"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("target sglang: installed sglang 0.5.23 (")  # its detected family
    assert "resolver get_swa_out_cache_loc" in out
    assert cli_main(["list", "--target", "unified"]) == 0
    assert "target unified: built in" in capsys.readouterr().out


def _docstrings(tree) -> set[int]:
    out = set()
    for node in [tree] + [n for n in ast.walk(tree) if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
    return out


def _target_names(source: str) -> list[str]:
    """Where ``source`` names the sglang target in code: string constants (not docstrings)
    holding ``sglang``, imports of ``swafuzz.targets.sglang``."""
    tree = ast.parse(source)
    docs, bad = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                "sglang" in node.value and id(node) not in docs:
            bad.append(f"{node.lineno}: {node.value!r}")
        mods = ([f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(m.startswith("swafuzz.targets.sglang") for m in mods):
            bad.append(f"{node.lineno}: imports {', '.join(mods)}")
    return bad


def test_the_harness_names_no_target():
    """The harness asks targets through their hooks: no ``"sglang"`` string outside docstrings
    and no import of ``swafuzz.targets.sglang`` in ``swafuzz/harness``."""
    import swafuzz.harness as harness

    root = os.path.dirname(harness.__file__)
    bad = [f"{os.path.relpath(os.path.join(d, n), root)}:{b}"
           for d, _, names in os.walk(root) for n in sorted(names) if n.endswith(".py")
           for b in _target_names(open(os.path.join(d, n)).read())]
    assert not bad, bad
    assert _target_names('"""sglang"""\nfrom swafuzz.targets import sglang\nx = "sglang"\n') \
        == ["2: imports swafuzz.targets.sglang", "3: 'sglang'"]


def test_the_release_matrix_agrees_with_the_records():
    """Each per-release answer "refused" of targets.sglang.matrix that names a kind is a release
    the records refuse that kind on (the table's prose and the support answers cannot drift)."""
    import re

    from swafuzz.targets.sglang.matrix import RANGES

    named = 0
    for ranges in RANGES.values():
        for first, last, answer, why in ranges:
            m = re.search(r"kind (\w+) refused", why)
            if answer != "refused" or m is None:
                continue
            named += 1
            for r in releases():
                if sg.version_key(first) <= sg.version_key(r) <= sg.version_key(last):
                    assert supports_at(m.group(1), r), (m.group(1), r)
    assert named >= 4


def test_sglang_case_answer_adds_what_the_release_lacks(installed, monkeypatch):
    """For a Case, the release's inspection (features.case_missing, faked here) is asked after
    the records: its answer names the missing attribute, after the records' reason if any."""
    import sys
    import types

    fake = types.ModuleType("swafuzz.targets.sglang.features")
    fake.case_missing = lambda case: "sglang X lacks Allocator.swa_req_ring" \
        if case.pool.swa_ring else None
    monkeypatch.setitem(sys.modules, "swafuzz.targets.sglang.features", fake)
    monkeypatch.setattr(sg, "features", fake, raising=False)
    ring = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8, swa_ring=4, req_slots=2),
                steps=(Step("admit", rid=0, length=3),), kind="ring")
    installed("0.5.20")
    why = targets.supports("sglang", ring)
    assert why.startswith("scenario kind ring (feature ring): sglang 0.5.20 has no ")
    assert why.endswith("; sglang X lacks Allocator.swa_req_ring")
    assert "feature ring (used by the Case)" not in why  # the kind's answer covers its owner
    installed("0.5.23")
    assert targets.supports("sglang", ring) == "sglang X lacks Allocator.swa_req_ring"
    plain = Case(pool=PoolConfig(page_size=1, full_pages=8, swa_pages=8),
                 steps=(Step("admit", rid=0, length=3),))
    assert targets.supports("sglang", plain) is None


def test_cli_target_refusing_every_kind_is_a_usage_error(monkeypatch):
    """All kinds left out (seen with an out-of-range release whose engine import had been
    cached by an earlier test: the run divided by zero kinds) is exit 2 naming the reason once."""
    from swafuzz import targets
    from swafuzz.harness.cli.common import UsageError, check_target_kinds

    monkeypatch.setattr(targets, "supports", lambda t, k: "release 0.5.99 is outside the range")
    with pytest.raises(UsageError) as e:
        check_target_kinds(["sglang"], ["decode", "idle"], False)
    assert str(e.value) == ("target sglang can run none of the scenario kinds: release 0.5.99 "
                            "is outside the range")


def test_since_applies_to_server_kinds():
    """A server kind's answer is its record's ``since`` as a component kind's: the request
    window's server kinds run from 0.5.21 on, the core ones on every supported release."""
    assert "request window" in supports_at("server_window", "0.5.12")
    assert supports_at("server_window_tail", "0.5.23") is None
    assert all(supports_at(k, "0.5.12") is None for k in features.default_kind_names("server"))
