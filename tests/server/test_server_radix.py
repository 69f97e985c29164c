"""The radix cache on at server level (``features/radix_tree``; marker ``upstream``): a prefix
group shared through the release's tree cache at page sizes below, equal to and above the shared
prefix, clean Cases of ``server_radix``, and each radix server mutant killed by its check."""

from __future__ import annotations

import importlib.util

import pytest

from swafuzz.server.case import parse

pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.usefixtures("pipeline_here")]

CASE = {"config": {"page_size": 1, "disable_radix_cache": False},
        "model": {"layers": 1, "full_tokens": 64, "swa_tokens": 64, "sliding_window": 4},
        "requests": [{"prompt_len": 6, "max_new_tokens": 4, "prefix_group": 0, "prefix_len": 5},
                     {"arrive_step": 2, "prompt_len": 7, "max_new_tokens": 2, "prefix_group": 0,
                      "prefix_len": 5}]}


def _checkpoint_shape() -> bool:
    from sglang.srt.mem_cache import common
    return hasattr(common, "checkpoint_kv_cache")


def _pipeline():
    from swafuzz.harness.pipeline.level_server import pipeline_of
    return pipeline_of("sglang")


@pytest.mark.parametrize("page,hit", [(1, 5), (2, 4), (8, 0)])
def test_a_group_shares_its_prefix_through_the_tree(page, hit):
    """Request 1 matches request 0's published prompt: the shared prefix floored to pages (none
    with a page above it), reads request 0's slots, and every slot is back after the run."""
    if not _checkpoint_shape():
        pytest.skip("the release publishes through cache_unfinished_req (refused below)")
    from swafuzz.server.run import execute

    case = parse({**CASE, "config": {"page_size": page, "disable_radix_cache": False}})
    res = execute(case, _pipeline())
    assert res.failures == [] and res.out_of_scope is None
    assert res.obs.tree["hits"] == ({2: {1: hit}} if hit else {})
    assert "end" in res.obs.tree


def test_older_release_refuses_naming_the_field():
    if _checkpoint_shape():
        pytest.skip("the release publishes through checkpoint_kv_cache (driven)")
    from swafuzz.server.run import ServerRefused, execute

    with pytest.raises(ServerRefused, match="config.disable_radix_cache"):
        execute(parse(CASE), _pipeline())


def _search(mutant, n):
    from swafuzz.harness.zoo.server import search

    found, cases, refused = search(_pipeline(), ["server_radix"], n, 0, ["eager"], mutant)
    return found, cases


def test_server_radix_cases_run_clean():
    if not _checkpoint_shape():
        pytest.skip("refused on this release")
    found, cases = _search(None, 12)
    assert found is None and cases == 12, found and found["verdict"].failures[:2]


@pytest.mark.parametrize("mutant,checks", [
    ("server_radix_lock_kept", {"tree_leak"}),
    ("server_radix_row_not_repointed", {"prefix_reads", "allocation"}),
    ("server_radix_insert_drops_swa_boundary", {"contracts", "prefix_reads", "allocation",
                                                "tree_leak"}),
    ("server_radix_chunk_published_whole", {"tree_leak", "prefix_reads", "contracts"}),
])
def test_each_radix_mutant_is_killed(mutant, checks):
    if not _checkpoint_shape():
        pytest.skip("refused on this release")
    found, _ = _search(mutant, 40)
    assert found is not None, f"{mutant} survived 40 server_radix Cases"
    assert found["verdict"].failures[0].check in checks
