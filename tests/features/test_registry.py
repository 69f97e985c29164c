"""The feature registry itself: every folder under ``swafuzz/features/`` is a valid record, the
records partition the scenario kinds, and every module a record names exists.

Reproduce: ``pytest tests/features/test_registry.py``.
"""

from __future__ import annotations

import importlib

import pytest

from swafuzz import features
from swafuzz.features.record import Feature, Kind, RecordError, Since

FEATURES = features.all_features()
IDS = [f.name for f in FEATURES]


def test_kinds_are_partitioned_by_the_records():
    names = features.kind_names()
    assert len(set(names)) == len(names)
    for k in names:
        assert k in features.feature_of_kind(k).kind_names()


@pytest.mark.parametrize("feat", FEATURES, ids=IDS)
def test_record_modules_exist(feat):
    for ref in feat.oracle + feat.engine + feat.mutants:
        importlib.util.find_spec(ref)
        assert importlib.util.find_spec(ref) is not None, f"{feat.name}: {ref}"
    for k in feat.kinds:
        assert callable(features.strategy(k.name)), k.strategy


def test_a_malformed_record_names_its_field():
    bad = Feature("x", "t", "s", (Kind("k", "swafuzz.features.dense.kinds:decode_cases", "s",
                                       since={"sglang": Since("0.5", "why")}),))
    with pytest.raises(RecordError, match=r"feature 'x': kinds\[k\]\.since: 'sglang'"):
        bad.validate()
    with pytest.raises(RecordError, match="kinds: a feature needs"):
        Feature("x", "t", "s", ()).validate()


def test_lookup_errors_name_the_known_values():
    with pytest.raises(KeyError, match="known: dense"):
        features.get("nope")
    with pytest.raises(KeyError, match="known kinds: decode"):
        features.feature_of_kind("nope")
