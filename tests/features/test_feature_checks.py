"""The checks from the feature records (issue 17): every ``@check`` in swafuzz belongs to exactly
one feature, every record's ``checks`` are what its ``check_modules`` define, and the
defence-in-depth reasons sit on their checks.

That every other check is the sole killer of some mutant is the zoo gate's proof
(``tests/harness/test_zoo_gate.py``); here only the reasons and which checks carry one.
Reproduce: ``pytest tests/features/test_feature_checks.py``.
"""

from __future__ import annotations

import importlib
import os
import re

import swafuzz
from swafuzz import features
from swafuzz.checks.registry import (
    all_checks,
    check_names,
    defence_in_depth,
    every_check,
    registered,
)

PKG = os.path.dirname(swafuzz.__file__)
DECORATED = re.compile(r"^\s*@check\(", re.M)


def _modules_with_checks() -> list[str]:
    """Every swafuzz module whose source defines a check with ``@check(...)``."""
    found = []
    for root, _, files in os.walk(PKG):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                if not DECORATED.search(f.read()):
                    continue
            rel = os.path.relpath(path, os.path.dirname(PKG))[:-3].replace(os.sep, ".")
            found.append(rel.removesuffix(".__init__"))
    return sorted(found)


def test_every_check_belongs_to_exactly_one_feature():
    mods = _modules_with_checks()
    assert mods, "no @check found under swafuzz/"
    for m in mods:
        importlib.import_module(m)
    ours = [c for c in registered() if c.module.startswith("swafuzz.")]
    assert {c.module for c in ours} == set(mods)
    for c in ours:
        owners = [f.name for f in features.all_features()
                  if c.ref in f.checks and c.module in f.check_modules]
        assert len(owners) == 1, (c.ref, c.module, owners)
    names = [c.ref for c in ours]  # a name is one check per level
    assert len(names) == len(set(names)), "a check name is defined twice"
    assert sorted(names) == sorted(c.ref for c in every_check())


def test_records_declare_what_their_modules_define():
    all_checks()  # raises RecordError naming the feature on a mismatch
    listed: dict[str, str] = {}
    for f in features.all_features():
        defined = tuple(c.ref for m in f.check_modules for c in registered() if c.module == m)
        assert defined == f.checks, f.name
        for m in f.check_modules:
            assert any(c.module == m for c in registered()), f"{f.name}: {m} defines no check"
            assert m not in listed, f"{m} is listed by {listed[m]} and {f.name}"
            listed[m] = f.name


def test_registry_order():
    """Feature order, then the record's module order, then definition order: the order of the
    checks before the registry, except ``history`` (the request window's second check); issue 18's
    ``prepared`` (the base feature's last module) and ``loc_buffer`` (the draft-extend buffer's)."""
    assert check_names() == (
        "write_targets", "pool_bytes", "write_set", "redzones", "invariants", "agreement",
        "capture_freeze", "contracts", "exec_path", "prepared", "loc_buffer", "window",
        "history", "tail",
        "window_graph", "compressor", "reprefill", "tail_graph", "refusal")
    assert [c.name for c in all_checks() if c.across] == ["agreement", "capture_freeze"]


def test_defence_in_depth_reasons():
    reasons = defence_in_depth()
    assert set(reasons) == {"write_set", "redzones", "agreement", "capture_freeze", "tail",
                            "reprefill", "refusal"}
    for name, why in reasons.items():
        assert isinstance(why, str) and len(why.split()) >= 10, name
