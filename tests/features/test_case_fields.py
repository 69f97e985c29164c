"""The Case fields and rules the feature records own.

Verified by: every ``case_fields`` entry naming a real field of PoolConfig / GraphConfig / Step /
Case; every record's ``semantics`` being its own ``SEMANTICS.md``; every field of those
dataclasses beyond the dense base set owned by exactly one feature (and no base field claimed);
every ``validators`` reference loading to a callable; for every
feature with validators, one Case breaking one of its rules that the common rules accept
(``Case.from_json``) and the feature's own validators refuse with a CaseError whose path names
the field (so does :func:`swafuzz.features.validation.load_case`); a valid Case passing every
validator; every field declaration (``fields.py``) being well formed and the field of its
dataclass (type, default), a set value surviving pickle / replace / hash and the JSON round trip
(emitted only when set), a value outside the declaration refused naming the field, a step field
refused on the ops that do not take it. Reproduce: ``pytest tests/features/test_case_fields.py``;
a new feature with rules adds its bad example to BAD.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
from collections import Counter

import pytest

from swafuzz import features
from swafuzz.features.validation import load_case, validate_case, validators
from swafuzz.scenarios.case import ALWAYS_EMITTED, Case, CaseError, GraphConfig, PoolConfig, Step
from swafuzz.server.case import ModelShape, Request, ServerConfig

FEATURES = features.all_features()
#: both levels' Case dataclasses (the server level's fields are all declared: no base set)
DATACLASSES = {"pool": PoolConfig, "graph": GraphConfig, "step": Step, "case": Case,
               "config": ServerConfig, "model": ModelShape, "request": Request}
#: the fields of the dense base (the pool, graph and steps every Case has); every other field
#: belongs to exactly one feature
BASE = {
    "pool": set(ALWAYS_EMITTED["pool"]),
    "graph": set(ALWAYS_EMITTED["graph"]),
    "step": {"op", "rid", "length", "rids", "tokens", "exec"},
    "case": {"pool", "graph", "steps", "payload_seed", "kind"},
}


def _all_fields() -> set[str]:
    return {f"{w}.{f.name}" for w, cls in DATACLASSES.items() for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("feat", FEATURES, ids=[f.name for f in FEATURES])
def test_case_fields_name_real_fields(feat):
    real = _all_fields()
    for cf in feat.case_fields:
        assert cf in real, f"{feat.name}: {cf} is no field of {sorted(DATACLASSES)}"


def test_every_field_beyond_the_base_has_one_owner():
    owners = Counter(cf for f in FEATURES for cf in f.case_fields)
    base = {f"{w}.{n}" for w, ns in BASE.items() for n in ns}
    assert not base & set(owners), f"base fields claimed by a feature: {base & set(owners)}"
    for name in sorted(_all_fields() - base):
        assert owners[name] == 1, f"{name} is owned by {owners[name]} features (expected 1)"


@pytest.mark.parametrize("feat", FEATURES, ids=[f.name for f in FEATURES])
def test_semantics_file_is_the_features_own(feat):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert feat.semantics.startswith("swafuzz/features/")
    assert feat.semantics.endswith(f"/{feat.name}/SEMANTICS.md")
    with open(os.path.join(root, feat.semantics)) as f:
        assert f.readline().strip() == f"# Case semantics: {feat.name}"


def test_validators_load():
    refs = [r for f in FEATURES for r in f.validators]
    assert len(validators()) == len(refs) > 0
    assert all(callable(v) for _, v in validators())


POOL = {"page_size": 2, "full_pages": 8, "swa_pages": 8, "window": 4, "layers": 2,
        "draft_layers": 1, "row_width": 4, "row_dtype": "uint8"}
ADMIT = {"op": "admit", "rid": 0, "length": 2}


def _case(pool=None, steps=(ADMIT,), graph=None):
    return {"pool": {**POOL, **(pool or {})},
            "graph": {"buckets": [1, 2], "num_draft_tokens": 3, **(graph or {})},
            "steps": [copy.deepcopy(s) for s in steps]}


#: feature -> (a Case breaking one of its rules, the field its CaseError names)
BAD = {
    "dp": (_case(steps=[ADMIT, {"op": "dp_decode", "rids": [], "rank_tokens": [1],
                                "dp_extend": True}]), "steps[1].dp_extend"),
    "padded_pages": (_case(pool={"row_dtype": "bfloat16", "page_pad_bytes": 3}),
                     "pool.page_pad_bytes"),
    "dsv4_layout": (_case(pool={"layout": "dsv4"}), "pool.row_width"),
    "prefix_share": (_case(steps=[ADMIT, {"op": "admit", "rid": 1, "length": 4,
                                          "prefix_rid": 1, "prefix_len": 2}]),
                     "steps[1].prefix_rid"),
    "ring": (_case(pool={"swa_ring": 8}), "pool.req_slots"),
    "request_window": (_case(pool={"request_window": 8}), "pool.window_slots"),
    "late_tail": (_case(pool={"late_layer_start": 2}), "pool.late_layer_start"),
    "encoder_replay": (_case(pool={"separate_replay": 1}), "pool.separate_replay"),
    "prefill_graphs": (_case(steps=[{**ADMIT, "exec": "graph"}]), "steps[0].exec"),
    "tail_graphs": (_case(steps=[ADMIT, {"op": "extend", "rids": [0], "lengths": [1],
                                         "tail_exec": "bucket"}]), "steps[1].tail_exec"),
    "ring_draft": (_case(steps=[ADMIT, {"op": "draft_block", "rids": [0]}]), "steps[1].op"),
    "big_layer": (_case(pool={"swa_held_pages": 8}), "pool.swa_held_pages"),
    "server_ops": (_case(steps=[ADMIT, {"op": "refused_admit", "rid": 1, "length": 2},
                                {"op": "extend", "rids": [0], "lengths": [1]}]),
                   "steps[1].op"),
}


def test_every_feature_with_rules_has_a_bad_example():
    assert set(BAD) == {f.name for f in FEATURES if f.validators}


@pytest.mark.parametrize("name", sorted(BAD))
def test_feature_validators_refuse_their_bad_case(name):
    obj, path = BAD[name]
    case = Case.from_json(obj)  # the common rules accept it: the rule is the feature's
    with pytest.raises(CaseError) as e:
        for ref in features.get(name).validators:
            features.load(ref)(case)
    assert e.value.path == path
    assert str(e.value).startswith(f"{path}: ")
    with pytest.raises(CaseError) as e2:
        load_case(obj)
    assert e2.value.path == path


def test_a_valid_case_passes_every_validator():
    obj = _case(pool={"swa_ring": 8, "req_slots": 2},
                steps=[ADMIT, {"op": "draft_block", "rids": [0]}, {"op": "finish", "rid": 0}])
    case = load_case(obj)
    assert validate_case(case) is case
    assert case.to_json()["pool"]["swa_ring"] == 8


# ---------------------------------------------------------------- the field declarations
#: every feature's declared fields, feature by feature (``fields.py`` beside its record)
DECLS = [(f.name, d) for f in FEATURES for d in f.field_decls()]


@pytest.mark.parametrize("name,decl", DECLS, ids=[d.ref for _, d in DECLS])
def test_declared_fields_are_the_dataclass_fields(name, decl):
    """A declaration is well formed and is the field of its dataclass: same type (the
    annotation string), same default; its record names it in ``case_fields``."""
    assert decl.problem() is None
    f = {x.name: x for x in dataclasses.fields(DATACLASSES[decl.where])}[decl.name]
    assert (f.type, f.default) == (decl.type, decl.default)
    assert decl.ref in features.get(name).case_fields


def _set(decl):
    """A value of ``decl`` away from its default that its own parse rule accepts."""
    if decl.type == "bool":
        return not decl.default
    if decl.type.startswith("str"):
        return decl.choices[-1]
    if decl.type.startswith("tuple[tuple"):
        return ((decl.choices[0], str(decl.lo)),)
    if decl.type.startswith("tuple"):
        return (max(decl.lo, 1),)
    v = max(decl.lo, 1)
    return v if v != decl.default else 2 * v


@pytest.mark.parametrize("name,decl", DECLS, ids=[d.ref for _, d in DECLS])
def test_a_set_feature_field_survives_pickle_replace_and_hash(name, decl):
    if decl.where == "step":
        obj = Step(decl.ops[0], **{decl.name: _set(decl)})
    else:
        obj = DATACLASSES[decl.where](**{decl.name: _set(decl)})
    assert pickle.loads(pickle.dumps(obj)) == obj
    assert hash(dataclasses.replace(obj)) == hash(obj)
    assert getattr(dataclasses.replace(obj, **{decl.name: decl.default}), decl.name) == \
        decl.default
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, decl.name, decl.default)


#: the component level's pool and graph declarations (the server level's:
#: tests/server/test_server_case_fields.py)
POOL_GRAPH = [(n, d) for n, d in DECLS if d.where in ("pool", "graph")]


@pytest.mark.parametrize("name,decl", POOL_GRAPH, ids=[d.ref for _, d in POOL_GRAPH])
def test_a_feature_field_is_emitted_only_when_set_and_parsed_back(name, decl):
    obj = _case(**{decl.where: {decl.name: _json(_set(decl))}})
    case = Case.from_json(obj)
    assert getattr(getattr(case, decl.where), decl.name) == _set(decl)
    assert case.to_json()[decl.where][decl.name] == _json(_set(decl))
    assert decl.name not in Case.from_json(_case()).to_json()[decl.where]


def _json(v):
    return list(v) if isinstance(v, tuple) else v


@pytest.mark.parametrize("name,decl", POOL_GRAPH, ids=[d.ref for _, d in POOL_GRAPH])
def test_a_feature_field_out_of_its_declaration_is_refused_naming_it(name, decl):
    bad = {"bool": 1, "str": "no-such-value", "int": -1, "tuple[int, ...]": [0, "x"]}
    obj = _case(**{decl.where: {decl.name: bad[decl.type]}})
    with pytest.raises(CaseError) as e:
        Case.from_json(obj)
    assert e.value.path.startswith(f"{decl.where}.{decl.name}")
    if decl.choices:
        assert ", ".join(decl.choices) in str(e.value)


def test_a_step_field_is_allowed_only_on_its_ops():
    for _, d in DECLS:
        if d.where != "step":
            continue
        op = next(o for o in ("remap", "evict", "idle") if o not in d.ops)
        step = {"remap": {"op": "remap"}, "evict": {"op": "evict", "rid": 0},
                "idle": {"op": "idle", "tokens": 1}}[op]
        with pytest.raises(CaseError) as e:
            Case.from_json(_case(steps=[ADMIT, {**step, d.name: _json(_set(d))}]))
        assert e.value.path == f"steps[1].{d.name}"
        assert "unknown field" in str(e.value)
