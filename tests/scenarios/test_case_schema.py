"""The Case schema: field-naming errors on bad input.

Verified by: each malformed input raising ``CaseError`` whose path names the field. Reproduce
with ``pytest tests/scenarios/test_case_schema.py``; extend by adding a (mutation, path) pair to
BAD. (The JSON round trip of every generated Case, kind by kind: tests/features/test_kinds.py.)
"""

import json

import pytest

from swafuzz.scenarios.case import Case, CaseError

GOOD = {
    "version": 1,
    "pool": {"page_size": 4, "full_pages": 4, "swa_pages": 4, "window": 4, "layers": 1,
             "draft_layers": 1, "row_width": 2, "row_dtype": "uint8"},
    "graph": {"buckets": [1, 2, 4], "topk": 1, "num_steps": 2, "num_draft_tokens": 2},
    "payload_seed": 7,
    "steps": [{"op": "admit", "rid": 0, "length": 3}, {"op": "decode", "rids": [0], "exec": "graph"}],
}


BAD = [
    (lambda d: d["pool"].update(page_size=3), "pool.page_size"),
    (lambda d: d["pool"].update(row_dtype="float32"), "pool.row_dtype"),
    (lambda d: d["pool"].update(bogus=1), "pool.bogus"),
    (lambda d: d["graph"].update(buckets=[2, 1]), "graph.buckets"),
    (lambda d: d["steps"].append({"op": "teleport"}), "steps[2].op"),
    (lambda d: d["steps"].append({"op": "decode", "rids": [0], "exec": "fast"}), "steps[2].exec"),
    (lambda d: d["steps"].append({"op": "decode", "rids": [0, 0]}), "steps[2].rids"),
    (lambda d: d["steps"].append({"op": "admit", "rid": 1, "length": 0}), "steps[2].length"),
    (lambda d: d["steps"].append({"op": "draft_extend", "rids": [0], "accept": []}),
     "steps[2].accept"),
    (lambda d: d.update(version=9), "case.version"),
    (lambda d: d.update(steps="x"), "case.steps"),
]


@pytest.mark.parametrize("mutate,path", BAD, ids=[p for _, p in BAD])
def test_errors_name_the_field(mutate, path):
    d = json.loads(json.dumps(GOOD))
    mutate(d)
    with pytest.raises(CaseError) as ei:
        Case.from_json(d)
    assert ei.value.path == path
    assert path in str(ei.value)


def test_not_json():
    with pytest.raises(CaseError, match="not valid JSON"):
        Case.loads("{")
