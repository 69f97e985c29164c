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


#: the points the core asks of every feature (``features.hooks``): any number may answer
MANY = ("sglang.facts", "engine.step_ops", "sglang.server_hops", "export.sglang_test")  # facts: one per feature


def test_every_hook_loads_and_single_hook_points_have_one_feature():
    declared = {p: [f.name for f in FEATURES if p in f.hooks] for p in features.HOOK_POINTS}
    for point, names in declared.items():
        assert len(names) <= 1 or point.startswith(("oracle.", "check.", "scenario.")) or \
            point.endswith(".part") or point in MANY, (point, names)
        if point.startswith("sglang.server"):  # the seams import the release: only where it is
            for f in FEATURES:
                if point in f.hooks:
                    mod = f.hooks[point].split(":")[0]
                    assert importlib.util.find_spec(mod) is not None, (point, mod)
            continue
        for obj in features.hooks(point):
            assert obj is not None, point
    # the engine's, oracle's and sglang target's points are all served
    assert all(declared[p] for p in features.HOOK_POINTS), declared


def test_every_part_subclasses_its_side_and_fills_only_its_slots():
    """A part (``"<side>.part"``) is a subclass of its side's base class; a slot it sets is
    one the base declares, and a :class:`features.parts.lazy` slot names a module that
    exists (the ``sglang`` side's import the release: found, not imported)."""
    from swafuzz.features.parts import SIDES, lazy
    for side, base in SIDES.items():
        for part in features.parts(side):
            own = {k: v for c in part.__mro__ if c is not base and issubclass(c, base)
                   for k, v in vars(c).items() if not k.startswith("__")}
            assert set(own) <= set(dir(base)), (part, set(own) - set(dir(base)))
            for k, v in own.items():
                if isinstance(v, lazy):
                    assert importlib.util.find_spec(v.ref.split(":")[0]) is not None, (part, k)


def test_a_slot_filled_by_no_part_or_by_two_is_refused(monkeypatch):
    assert features.slot("engine", "window_graph_runner", optional=True) is not None
    with pytest.raises(KeyError, match="no slot 'nope'"):
        features.slot("engine", "nope")
    twice = [*features.parts("engine")] * 2
    monkeypatch.setattr(features, "parts", lambda side: twice)
    with pytest.raises(RecordError, match="takes one feature's part; 2 fill it"):
        features.slot("engine", "step_path")
    monkeypatch.setattr(features, "parts", lambda side: [])
    assert features.slot("engine", "window_graph_runner", optional=True) is None


def test_an_unknown_hook_point_is_refused_naming_the_known_ones():
    with pytest.raises(KeyError, match="known: engine.part"):
        features.hooks("engine.nope")
    rec = Feature("x", "t", "s", (Kind("k", "swafuzz.features.dense.kinds:decode_cases", "s"),),
                  hooks={"engine.part": "not a ref"})
    with pytest.raises(RecordError, match=r"hooks\[engine.part\]"):
        rec.validate()


def test_an_engine_subclass_still_replaces_a_hooked_class_attribute():
    from swafuzz.targets.engine import UnifiedEngine

    class Mine:
        pass

    class Sub(UnifiedEngine):
        step_path_cls = Mine

    assert Sub.step_path_cls is Mine
    assert UnifiedEngine.step_path_cls is features.slot("engine", "step_path")


def test_hook_point_names_say_what_the_core_asks_not_which_feature_answers():
    """No hook point's ``.``/``_`` parts contain a feature's name or one of its kinds' (the base
    feature's kinds are forward modes, core vocabulary), as ``scripts/structure-report`` counts
    names in core code."""
    terms = {f.name for f in FEATURES} | {k for f in FEATURES if f.name != "dense"
                                          for k in f.kind_names()}
    for point in features.HOOK_POINTS:
        parts = point.replace(".", "_").split("_")
        for t in terms:
            tp = t.split("_")
            assert not any(parts[i:i + len(tp)] == tp for i in range(len(parts))), (point, t)


def test_kinds_have_a_level_and_the_component_callers_keep_their_kinds():
    """Server kinds are record entries (``Kind(level="server")``): ``kind_names()`` stays the
    component kinds, ``kind_names("server")`` the server ones, opt-in ones out of the level's
    default kinds; a malformed level is refused naming the kind."""
    comp, srv = features.kind_names(), features.kind_names("server")
    assert not set(comp) & set(srv) and "server_decode" not in comp
    assert srv[:4] == ("server_decode", "server_mixed", "server_graph", "server_attn_tp")
    assert set(srv) - set(features.default_kind_names("server")) == {
        "server_spec", "server_spec_graph", "server_dp", "server_dp_overlap", "server_window",
        "server_window_tail", "server_radix", "server_pd_decode"}
    assert features.feature_of_kind("server_window").name == "request_window"
    assert all(features.kind(k).level == "component" for k in features.default_kind_names())
    bad = Feature("x", "t", "s", (Kind("k", "swafuzz.features.dense.kinds:decode_cases", "s",
                                       level="cluster"),))
    with pytest.raises(RecordError, match=r"kinds\[k\].level"):
        bad.validate()


def test_server_support_is_decided_by_the_records_refusals():
    """``features.refusal``: the records' config refusals of a level (their reasons name the
    field), the release ones only with a version; a Refusal without a reason is refused."""
    from swafuzz.features.record import Refusal
    from swafuzz.server.case import ServerConfig

    assert features.refusal("server", ServerConfig()) is None
    why = features.refusal("server", ServerConfig(disable_radix_cache=False,
                                                  enable_encoder_swa_bounded_replay=True))
    assert why.startswith("config.disable_radix_cache:")
    assert features.refusal("server", ServerConfig(disable_radix_cache=False,
                                                   disable_cuda_graph=False,
                                                   cuda_graph_bs_decode=(1,))) is None
    why = features.refusal("server", ServerConfig(enable_decoder_swa_bounded_replay=True))
    assert why.startswith("config.enable_decoder_swa_bounded_replay:")
    assert features.refusal("component", ServerConfig(disable_radix_cache=False)) is None
    bad = Feature("x", "t", "s", (Kind("k", "swafuzz.features.dense.kinds:decode_cases", "s"),),
                  refusals=(Refusal("server",
                                    "swafuzz.features.radix_tree.server_rules:not_driven_with"),))
    with pytest.raises(RecordError, match="refusals"):
        bad.validate()
