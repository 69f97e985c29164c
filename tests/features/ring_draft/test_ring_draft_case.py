"""Case validation of ``draft_block`` and of the ring refusals (issue 12, features/ring/ring_draft/SEMANTICS.md "DSpark
draft block on a ring", ``features/ring/ring_draft/rules.py``): every malformed field raises a
CaseError naming the dotted field; the refusals say which release code shows why."""

import pytest

from swafuzz.features.validation import load_case
from swafuzz.scenarios.case import Case, CaseError

POOL = {"page_size": 2, "full_pages": 8, "swa_pages": 2, "window": 3, "swa_ring": 6,
        "req_slots": 2, "layers": 1, "draft_layers": 1, "row_width": 4}
GRAPH = {"buckets": [1, 2], "num_draft_tokens": 3}
STEPS = [{"op": "admit", "rid": 0, "length": 3}, {"op": "draft_block", "rids": [0]}]


def _case(pool=None, graph=None, steps=None):
    return {"pool": {**POOL, **(pool or {})}, "graph": {**GRAPH, **(graph or {})},
            "steps": steps or STEPS}


def test_valid_draft_block_round_trips():
    c = Case.from_json(_case())
    assert c.steps[1].op == "draft_block" and c.steps[1].exec == "eager"
    assert Case.loads(c.dumps()) == c
    assert c.to_json()["steps"][1] == {"op": "draft_block", "rids": [0], "exec": "eager"}


def test_graph_draft_block_allowed_when_gamma_below_page_size():
    c = Case.from_json(_case(pool={"page_size": 4, "swa_ring": 8},
                             steps=[STEPS[0], {"op": "draft_block", "rids": [0],
                                               "exec": "graph"}]))
    assert c.steps[1].exec == "graph" and Case.loads(c.dumps()) == c


@pytest.mark.parametrize("obj,path,words", [
    (_case(pool={"swa_ring": 0, "req_slots": 0}), "steps[1].op", "needs a per-request SWA ring"),
    (_case(graph={"num_draft_tokens": 1}), "graph.num_draft_tokens", "must be >= 2"),
    (_case(pool={"swa_ring": 4}), "pool.swa_ring", "window + num_draft_tokens - 1 = 5"),
    (_case(steps=[STEPS[0], {"op": "draft_block", "rids": [0], "exec": "graph"}]),
     "steps[1].exec", "graph needs num_draft_tokens - 1 < page_size"),
    (_case(steps=[STEPS[0], {"op": "draft_block", "rids": []}]), "steps[1].rids",
     "at least one request"),
    (_case(steps=[STEPS[0], {"op": "draft_block", "rids": [0], "accept": [1]}]), "steps[1].accept",
     "unknown field"),
    (_case(steps=[STEPS[0], {"op": "draft_decode", "rids": [0]}], graph={"topk": 1,
                                                                          "num_steps": 2}),
     "steps[1].op", "uses_draft_swa_ring"),
    (_case(graph={"draft_extend_buffer": True}), "graph.draft_extend_buffer",
     "_fill_cuda_graph_swa_out_cache_loc"),
])
def test_malformed_draft_block_cases(obj, path, words):
    with pytest.raises(CaseError) as e:
        load_case(obj)
    assert e.value.path == path and words in str(e.value), str(e.value)
