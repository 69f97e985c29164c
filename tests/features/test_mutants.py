"""The bug zoo against the feature registry: every mutant is declared where its feature's record
says, with kinds the registry knows, a cited source and the checks expected to kill it; and it is
killed by one of those checks on the first Cases of its kinds.

The kill test here is the fast one (seed 1, the CI budget's cases, stopped at the first failing
Case, no shrinking, no ablation); ``tests/harness/test_zoo_gate.py`` (marker ``zoo``) runs the
matrix on seed 0 (shrinking, leave-one-out, the control): in CI every mutant is killed on two
seeds, one here and one there.
Reproduce: ``pytest tests/features/test_mutants.py`` (one mutant: ``-k ring_no_mod``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re

import pytest

from swafuzz import features
from swafuzz.checks.registry import check_names
from swafuzz.harness.zoo.matrix import first_kill, not_here
from swafuzz.targets import available_targets, find_target, get_target, supports
from swafuzz.targets.mutants import ERROR, MutantError, known_checks, load_all, load_server, mutant

ZOO = load_all()
NAMES = list(ZOO)
#: mutants of a release not installed here (the sglang target's): name -> why
NOT_HERE = not_here()
MUTANT_DIR = os.path.dirname(load_all.__code__.co_filename)
#: a source cites an upstream PR or issue (``PR #123``, ``issue #123``, ``sglang #123``) or a
#: section of the spec / addendum (``§4.6``)
CITATION = re.compile(r"#\d{3,}|§\s?\d")


def test_the_zoo_is_loaded_from_the_records():
    assert len(ZOO) >= 76
    listed = {m for f in features.all_features() for m in f.mutants}
    assert {s.engine.__module__ for s in ZOO.values()} | {
        m.module for m in load_server().values()} == listed


@pytest.mark.parametrize("name", NAMES)
def test_kinds_belong_to_registered_features(name):
    spec = ZOO[name]
    assert spec.kinds and set(spec.kinds) <= set(features.kind_names()), spec.kinds
    assert spec.feature == features.feature_of_kind(spec.kinds[0]).name


@pytest.mark.parametrize("name", NAMES)
def test_its_feature_record_lists_its_module(name):
    spec = ZOO[name]
    mod = spec.engine.__module__
    assert mod in features.get(spec.feature).mutants, (name, mod, spec.feature)
    assert mod.startswith("swafuzz.features.") and mod.endswith(f".{spec.feature}.mutants"), mod


@pytest.mark.parametrize("feat", features.all_features(), ids=lambda f: f.name)
def test_records_list_exactly_the_modules_holding_their_mutants(feat):
    holding = {s.engine.__module__ for s in ZOO.values() if s.feature == feat.name}
    holding |= {m.module for m in load_server().values() if m.feature == feat.name}
    assert set(feat.mutants) == holding


@pytest.mark.parametrize("name", NAMES)
def test_source_expected_and_docstring(name):
    spec = ZOO[name]
    assert CITATION.search(spec.source), spec.source
    assert spec.expected and set(spec.expected) <= set(check_names()) | {ERROR}, spec.expected
    doc = spec.engine.__doc__ or ""
    bug = doc.split("\n\nSource: ")[0]
    assert len(bug) > 30, f"{name}: its class docstring must say the bug"
    assert f"Source: {spec.source}." in doc and "Expected to be killed by: " in doc


def test_known_checks_are_the_harness_checks():
    assert set(known_checks()) == set(check_names()) | {ERROR}


def test_mutant_targets_resolve_through_the_loader():
    offered = {t for t in available_targets() if t.startswith("mutant:")}
    assert {f"mutant:{n}" for n in NAMES} <= offered
    for n in NAMES:
        assert find_target(f"mutant:{n}") is ZOO[n].engine
        if n not in NOT_HERE:
            assert get_target(f"mutant:{n}") is ZOO[n].engine


def test_unknown_kind_or_check_names_the_mutant_and_the_known_values():
    with pytest.raises(MutantError, match=r"mutant 'bad': unknown scenario kind\(s\) nope; "
                                          r"known kinds: decode"):
        mutant("bad", ("nope",), "spec §1")
    with pytest.raises(MutantError, match=r"mutant 'bad': unknown expected check\(s\) nope; "
                                          r"known checks: write_targets"):
        mutant("bad", ("decode",), "spec §1", expected=("nope",))
    assert "bad" not in load_all()
    with pytest.raises(MutantError, match=r"server mutant 'bad': unknown server kind\(s\) "
                                          r"decode; known: server_decode"):
        mutant("bad", ("decode",), "spec §1", level="server", patch="swafuzz.x:y")
    assert "bad" not in load_server()


def test_the_package_lists_no_modules_and_every_module_is_small():
    init = os.path.join(MUTANT_DIR, "__init__.py")
    text = open(init).read()
    assert "isort: split" not in text
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("swafuzz.targets.mutants"), node.module
    # the mutants live in the feature folders (the records' ``mutants``), not in MUTANT_DIR
    paths = [init] + [importlib.util.find_spec(m).origin
                      for f in features.all_features() for m in f.mutants]
    assert len(paths) > 1, "no feature record lists a mutants module"
    for path in paths:
        with open(path) as f:
            assert sum(1 for _ in f) < 400, path


#: a mutant whose kinds are all resource-gated is killed on Cases of GBs: only under -m bigmem
KILLS = [pytest.param(n, marks=pytest.mark.bigmem)
         if set(ZOO[n].kinds) <= set(features.gated_kinds()) else n for n in NAMES]


@pytest.mark.parametrize("name", KILLS)
def test_killed_by_an_expected_check_on_the_first_cases(name):
    if name in NOT_HERE:
        pytest.skip(NOT_HERE[name])
    spec = ZOO[name]
    why = [supports(f"mutant:{name}", k) for k in spec.kinds]
    if all(why):  # the installed release lacks the code the fault is in
        pytest.skip("; ".join(dict.fromkeys(why)))
    verdict, cases = first_kill(name, seed=1)
    assert verdict is not None, f"{name} survived {cases} cases of {spec.kinds}"
    got = {f.check for f in verdict.failures}
    assert got & set(spec.expected), (name, sorted(got), spec.expected,
                                      [f.message for f in verdict.failures[:3]])
