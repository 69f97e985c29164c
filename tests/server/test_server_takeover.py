"""The decode side of prefill/decode disaggregation taking over a transferred prompt: the
release's ``DecodePreallocQueue._pre_alloc`` (``targets/sglang/pipeline/disagg.py``) judged by
the plain-Python prediction (``swafuzz/server/takeover.py``)."""

from __future__ import annotations

import contextlib
import importlib.util

import pytest

from swafuzz.server.case import parse
from swafuzz.server.takeover import judge_takeover, tail_start


def _case(page: int, window: int = 3) -> dict:
    return {"config": {"page_size": page},
            "model": {"full_tokens": 96, "swa_tokens": 48, "sliding_window": window,
                      "swa_eviction_interval": 1},
            "requests": [{"prompt_len": 9, "max_new_tokens": 20},
                         {"prompt_len": 11, "max_new_tokens": 2, "arrive_step": 40}]}


def test_tail_start_is_the_window_start_floored_to_a_page():
    assert [tail_start(parse(_case(p)), 11) for p in (1, 2, 4)] == [0, 8, 8]
    assert tail_start(parse(_case(4)), 3) == 0
    assert [tail_start(parse(_case(p, 6)), 11) for p in (1, 2, 4)] == [0, 4, 4]


def test_judge_takeover_names_each_difference():
    case = parse(_case(2))  # fill 11, window from 8: a 3-token tail
    rec = {"loc": list(range(20, 31)), "row": list(range(20, 31)),
           "mapping": [0] * 8 + [10, 11, 12], "mapping_before": [0] * 11,
           "free_before": [96, 48], "free_after": [84, 44]}
    assert judge_takeover(case, 1, rec) == []
    for key, value, words in [("mapping", [5] + [0] * 7 + [10, 11, 12], "expected 0 (reset)"),
                              ("mapping", [0] * 8 + [0, 11, 12], "not a fresh slot"),
                              ("row", [0] * 11, "req_to_token row"),
                              ("free_after", [84, 46], "free [full, SWA]"),
                              ("loc", list(range(21, 32)), "fresh page")]:
        bad = dict(rec, **{key: value})
        assert any(words in m for m in judge_takeover(case, 1, bad)), (key, value)
    assert judge_takeover(case, 1, rec, live_swa={10})


def _takeover(page: int, mutant: bool = False):
    """Request 0 prefilled and decoding for 3 steps, then request 1 taken over (``mutant``:
    under :func:`disagg.tail_short_by_a_page`, spec §9.15); its record and the full /
    in-window SWA slots request 0 holds then."""
    from swafuzz.targets.sglang.pipeline import disagg, seams
    from swafuzz.targets.sglang.pipeline.steps import Pipeline, eviction_interval

    case = parse(_case(page, 6))  # fill 11: the window from position 5, a tail over a page
    bug = disagg.tail_short_by_a_page() if mutant else contextlib.nullcontext()
    with bug, eviction_interval(1), seams.cpu_platform():
        p = Pipeline(case)
        p.start()
        allocs = []
        for t in range(4):
            p.leave(t)
            for ev, batch in p.batches(t):
                rec = p.forward(ev, batch)
                allocs += rec.alloc
                p.after_forward(ev, batch)
        got = disagg.takeover(p, 1)
    live_full = {f for f, _ in allocs}
    return case, got, live_full, {s for _, s in allocs[-6:]}


@pytest.mark.upstream
@pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                    reason="sglang is not installed (scripts/upstream-env VERSION)")
@pytest.mark.usefixtures("pipeline_here")
@pytest.mark.parametrize("page", [1, 2, 4])
def test_release_prealloc_as_predicted(page):
    case, rec, full, swa = _takeover(page)
    assert rec["tail_swa"] == (page > 1)
    assert judge_takeover(case, 1, rec, full, swa) == []
    if page > 1:  # the head maps to 0, the tail is the window's pages
        assert rec["mapping"][:4] == [0] * 4 and 0 not in rec["mapping"][4:]
        fails = judge_takeover(case, 1, _takeover(page, mutant=True)[1],
                               full, swa)
        assert fails and "is not a fresh slot" in fails[0], fails
