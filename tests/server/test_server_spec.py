"""Speculative decoding at server level (``targets/sglang/pipeline/spec.py``, oracle
``server/spec_oracle.py``; marker ``upstream``): the release's spec-v2 reserve, verify prep,
accept bookkeeping and draft-extend prep, and each spec mutant killed by its check."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]

SPEC = {"config": {"page_size": 1, "speculative_algorithm": "EAGLE", "speculative_num_steps": 2,
                   "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 3},
        "model": {"layers": 2, "full_tokens": 96, "swa_tokens": 96, "sliding_window": 4},
        "requests": [{"prompt_len": 5, "max_new_tokens": 6, "accept_lengths": [2, 1, 3]},
                     {"prompt_len": 3, "max_new_tokens": 4, "accept_lengths": [1, 3]}]}



def _spec_v2() -> bool:
    """The release has the spec-v2 worker with the planned draft the pipeline drives (0.5.22+;
    0.5.13 .. 0.5.21 have the worker, their spec Cases are refused naming the draft prep)."""
    if importlib.util.find_spec("sglang.srt.speculative.eagle_worker_common") is None:
        return False
    from swafuzz.targets.sglang.pipeline.argnames import planned_draft

    return planned_draft()


def _run(obj=SPEC, mutant=None):
    if not _spec_v2() and mutant is None and obj is SPEC:
        pytest.skip("the release has no spec-v2 EAGLE worker (refused: test_release_...)")
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.server.run import execute

    return execute(parse(obj), pipeline_of("sglang"), mutant=mutant)


def test_iterations_through_the_release():
    """Per DECODE: the release's reserve (2 x draft tokens), the draft's step at the committed
    length, a verify of 3 rows per request over the draft's planned window, the draft extend
    over the same slots, the accept committed."""
    v = _run()
    assert not v.failed, [f.message for f in v.failures]
    it = v.obs.spec
    assert [s["verify"]["mode"] for s in it] == ["TARGET_VERIFY"] * len(it)
    assert [s["draft_extend"]["mode"] for s in it] == ["DRAFT_EXTEND_V2"] * len(it)
    first = it[0]
    assert [d["out_cache_loc"] for d in first["draft"]] == [[9, 15]]  # step 0: committed slots
    assert first["verify"]["positions"] == [5, 6, 7, 3, 4, 5]
    assert first["draft_extend"]["out_cache_loc"] == first["verify"]["out_cache_loc"]
    assert first["committed"] == [7, 4] and first["allocated"] == [11, 9]
    assert len(v.obs.forwards[1].alloc) == 12  # (5 + 6 - 5) + (3 + 6 - 3)
    assert v.obs.free["after"] == v.obs.free["before"]


ONE = {**SPEC, "requests": SPEC["requests"][:1]}


@pytest.mark.parametrize("mutant,check", [
    # the first request's leaked slot shows in the next iteration's full-pool accounting
    ("server_spec_free_short", "spec_pool"),
    ("server_spec_commit_extra", "spec_accept"),
    ("server_spec_draft_dummy", "draft_extend"),
    ("server_spec_reserve_single", "spec_alloc"),
    ("server_spec_draft_one_ahead", "draft_decode"),
    ("server_spec_verify_stale", "verify_rows"),
    ("server_spec_accept_frees", "spec_pool"),
])
def test_spec_mutants_killed(mutant, check):
    if not _spec_v2():
        pytest.skip("the release has no spec-v2 EAGLE worker")
    v = _run(mutant=mutant)
    assert v.failed and v.failures[0].check == check, [f.message for f in v.failures]


def test_a_leak_after_the_last_request_is_spec_leak():
    if not _spec_v2():
        pytest.skip("the release has no spec-v2 EAGLE worker")
    v = _run(ONE, mutant="server_spec_free_short")
    assert [f.check for f in v.failures] == ["spec_leak"], [f.message for f in v.failures]


def test_release_accepts_eagle_topk1_and_the_pipeline_refuses_the_rest():
    from swafuzz.server.run import ServerRefused
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal

    if not _spec_v2():  # 0.5.12 .. 0.5.21: refused by field name, with the reason
        with pytest.raises(ServerRefused, match="config.speculative_algorithm: sglang .* (has no "
                           "spec-v2 EAGLE worker|takes no target_translator)"):
            _run(dict(SPEC))
        return
    assert release_refusal(parse(SPEC).config.server_args()) is None
    tree = {**SPEC, "config": {**SPEC["config"], "speculative_eagle_topk": 2}}
    with pytest.raises(ServerRefused, match="config.speculative_eagle_topk"):
        _run(tree)
    # the reason is the release's own: its DeepSeek-V4 argument hook refuses a draft tree
    why = release_refusal(parse({**tree, "config": {**tree["config"],
                                                    "speculative_num_draft_tokens": 4}}
                                ).config.server_args())
    assert why is not None and "topk == 1" in why
