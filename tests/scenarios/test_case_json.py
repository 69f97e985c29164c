"""The Case's JSON form is stable: a field is emitted only when it differs from its default (the
base fields every version-1 bundle carries are always emitted), so the JSON of existing Cases
does not change when a feature adds a field.

Verified by: golden JSON (``data/case_json_golden.json``, written by the hand-listed ``to_json``
this generic one replaced) of hypothesis-generated Cases of every kind and of the hand-built
Cases below, compared with today's ``to_json`` / ``dumps``; every repro bundle under
``tests/data`` and ``ledger/`` parsing and re-emitting its ``case`` unchanged; ``from_json``
rejecting an unknown field with a message naming it and the allowed ones. Reproduce with
``pytest tests/scenarios/test_case_json.py``; extend by adding a Case to BUILT and its golden
dict to the data file (written by ``to_json``, checked by hand).
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from swafuzz import features
from swafuzz.scenarios.case import Case, CaseError, GraphConfig, PoolConfig, Step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(os.path.dirname(__file__), "data", "case_json_golden.json")

#: hand-built Cases: every optional field set away from its default, and every op with its
#: defaults (the fields emitted even at their default: ``exec`` of a forward, dp_decode's rids)
BUILT = {
    "defaults": Case(),
    "every_op_default": Case(steps=(
        Step("admit", rid=0, length=3), Step("decode", rids=(0,)), Step("verify", rids=(0,)),
        Step("draft_extend", rids=(0,), accept=(1,)), Step("draft_decode", rids=(0,)),
        Step("idle", tokens=2), Step("dp_decode", rank_tokens=(2,)), Step("evict", rid=0),
        Step("finish", rid=0), Step("remap"), Step("extend", rids=(0,), lengths=(1,)),
        Step("draft_block", rids=(0,)))),
    "every_pool_field": Case(kind="k", payload_seed=9, pool=PoolConfig(
        page_size=2, full_pages=5, swa_pages=6, window=3, layers=2, draft_layers=2,
        row_width=8, row_dtype="bfloat16", page_pad_bytes=4, layout="dsv4",
        request_window=8, window_slots=2, window_chunk=4, late_layer_start=1, swa_ring=8,
        req_slots=3, separate_replay=1)),
    "every_graph_field": Case(graph=GraphConfig(
        buckets=(1, 3), topk=2, num_steps=3, num_draft_tokens=4, prep_in_graph=True,
        draft_extend_buffer=True, prefill_buckets=(8, 16), tail_buckets=(4,),
        tail_capacity=32)),
    "every_step_field": Case(steps=(
        Step("admit", rid=1, length=8, prefix_rid=0, prefix_len=4, exec="graph"),
        Step("verify", rids=(0, 1), accept=(1, 2), rank_tokens=(3,), dp_extend=True,
             exec="graph"),
        Step("extend", rids=(0,), lengths=(2,), replay=(0,), rank_tokens=(1, 2),
             tail_exec="bucket", exec="graph"),
        Step("dp_decode", rids=(), rank_tokens=(1,), tail_exec="bucket", exec="graph"),
        Step("dp_decode", rids=(2,), rank_tokens=(0,), dp_extend=True))),
}


def _golden() -> dict:
    with open(GOLDEN) as f:
        return json.load(f)


def _kind_cases():
    return [(k, i, d) for k, ds in sorted(_golden()["kinds"].items()) for i, d in enumerate(ds)]


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_cases_emit_the_golden_json(name):
    want = _golden()["built"][name]
    assert BUILT[name].to_json() == want
    assert BUILT[name].dumps() == json.dumps(want, sort_keys=True)


@pytest.mark.parametrize("kind,i,d", _kind_cases(), ids=lambda x: str(x)[:24])
def test_generated_cases_re_emit_byte_identical(kind, i, d):
    case = Case.from_json(d)
    assert case.kind == kind
    assert case.to_json() == d
    assert case.dumps() == json.dumps(d, sort_keys=True)


def test_golden_cases_cover_the_kinds_they_were_drawn_from():
    """The golden JSON was drawn from the 29 kinds that existed when emission became generic;
    every one of them must still exist (a kind added later is covered by the generic round trip
    of tests/features/test_kinds.py, which needs no golden file)."""
    golden = set(_golden()["kinds"])
    assert len(golden) >= 29 and golden <= set(features.kind_names())


def _bundle_cases():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "**", "*.json"),
                                 recursive=True)
                       + glob.glob(os.path.join(ROOT, "ledger", "**", "*.json"), recursive=True)):
        with open(path) as f:
            obj = json.load(f)
        if isinstance(obj, dict) and isinstance(obj.get("case"), dict):
            found.append((os.path.relpath(path, ROOT), obj["case"]))
    return found


def test_repro_bundles_re_emit_unchanged():
    from swafuzz.server.case import ServerCase

    cases = _bundle_cases()
    assert len(cases) >= 10
    for path, d in cases:  # a server-level bundle's Case (its "config") is a ServerCase
        load = ServerCase.from_json if "config" in d else Case.from_json
        assert load(d).to_json() == d, path


@pytest.mark.parametrize("where", ["case", "pool", "graph", "steps[0]"])
def test_unknown_field_names_it_and_the_allowed_ones(where):
    d = BUILT["every_step_field"].to_json()
    target = {"case": d, "pool": d["pool"], "graph": d["graph"], "steps[0]": d["steps"][0]}[where]
    target["bogus_field"] = 1
    with pytest.raises(CaseError) as e:
        Case.from_json(d)
    assert e.value.path == f"{where}.bogus_field"
    msg = str(e.value)
    assert "unknown field; allowed:" in msg
    allowed = msg.split("allowed:", 1)[1]
    assert "bogus_field" not in allowed
    keys = {"case": ("pool", "steps"), "pool": ("page_size", "swa_ring"),
            "graph": ("buckets", "tail_capacity"), "steps[0]": ("prefix_rid", "length")}[where]
    for k in keys:
        assert k in allowed
