"""The metadata the release's preparations build, compared with the oracle (issue 18, item 6):
the ``prepared`` and ``loc_buffer`` checks on the ``sglang`` target.

0.5.23's draft-extend prep is driven by the target (``targets/sglang/metadata.py``): its capture
gets no locations, so the captured stores translate the live locations themselves and read
neither the prep's ``raw_out_loc`` nor its refilled buffer. A prep that builds them wrong leaves
every store right; only the prepared metadata shows it. Each test breaks the release's prep one
way (our own broken variant of the step, not the release's code) and shows that the store checks
pass while the new check fails.

Marker ``upstream``: run in an environment built by ``scripts/upstream-env VERSION``; skips when
sglang is absent, and on releases without the draft-extend prep (0.5.12). Reproduce:
``scripts/upstream-check 0.5.23`` or, in ``.venv-sglang-0.5.23``,
``pytest -m upstream tests/targets/test_sglang_prepared.py``.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

pytestmark = [
    pytest.mark.upstream,
    pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                       reason="sglang is not installed (build an environment with "
                              "scripts/upstream-env VERSION)"),
]

EXECUTORS = ["eager", "tape"]
#: the checks that judge the stores and the pools (the ones that could see a wrong write)
STORE_CHECKS = {"write_targets", "pool_bytes", "write_set", "redzones", "agreement",
                "capture_freeze", "contracts"}

# graph draft-extends in buckets 4 then 2 (the second leaves the buffer's tail to the refill),
# then an eager one
CASE = Case(
    pool=PoolConfig(full_pages=24, swa_pages=24, window=12),
    graph=GraphConfig(buckets=(2, 4), topk=1, num_draft_tokens=2, draft_extend_buffer=True),
    kind="draft_extend_buffer",
    steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=3),
           Step("admit", rid=2, length=3),
           Step("draft_extend", rids=(0, 1, 2), accept=(2, 2, 1), exec="graph"),
           Step("draft_extend", rids=(1,), accept=(1,), exec="graph"),
           Step("draft_extend", rids=(2, 0), accept=(2, 1))))


@pytest.fixture
def release():
    from swafuzz.targets.sglang import engine, metadata, real

    if not metadata.REAL_DRAFT_EXTEND:
        pytest.skip(f"sglang {real.VERSION}: no draft-extend SWA location prep (0.5.18+)")
    return engine, metadata


def _fired(case, target="sglang") -> set[str]:
    from swafuzz.harness.pipeline.execute import execute

    return {f.check for f in execute(case, target, "torch", EXECUTORS).failures}


def test_the_release_prep_is_recorded_and_matches_the_oracle(release):
    """Every draft-extend forward records what the release's prep built; the graph ones also
    the buffer it refilled (the stamp is its front); all of it equals the oracle's."""
    from swafuzz.harness.executors import get_executor

    engine, _ = release
    obs = engine.SGLangEngine(CASE, "torch", get_executor("tape")).run()
    assert obs.error is None, obs.error
    drafts = [f for f in obs.forwards if f.mode == "DRAFT_EXTEND_V2"]
    assert [f.exec for f in drafts] == ["graph", "graph", "eager"]
    for f in drafts:
        assert f.prepared["out_loc"][:f.n_real] and "swa_loc" in f.prepared
    graph = [f for f in drafts if f.exec == "graph"]
    assert all(len(f.prepared["loc_buffer"]) == 8 for f in graph)  # max bucket 4 x 2 rows
    # the second replay's bucket (2 x 2 rows): one live row, the rest of the buffer zeroed
    assert graph[1].prepared["loc_buffer"][1:] == [0] * 7
    assert _fired(CASE) == set()


def test_a_prep_that_drops_the_live_locations_is_seen_only_by_prepared(release, monkeypatch):
    """The review-era call (spec §4.4, §9.1): the release's out-graph prep handed no
    ``out_cache_loc`` on a replay builds its metadata from synthetic zeros and stamps nothing;
    the captured stores translate live and stay right. Only ``prepared`` fails."""
    _, metadata = release
    batch = metadata._batch

    def without_locations(fb, in_capture):
        b = batch(fb, in_capture)
        b.out_cache_loc = None
        return b

    monkeypatch.setattr(metadata, "_batch", without_locations)
    assert _fired(CASE) == {"prepared"}


def _refill_keeping_the_tail(self, loc):
    """Our broken refill: the front translated, the entries past it left as they were."""
    buf = self.cuda_graph_swa_out_cache_loc
    if buf is None or loc is None or loc.shape[0] > buf.shape[0]:
        return None
    n = loc.shape[0]
    buf[:n] = self.token_to_kv_pool.translate_loc_from_full_to_swa(loc).to(buf.dtype)
    return buf[:n]


def test_a_refill_that_keeps_the_tail_is_seen_only_by_loc_buffer(release, monkeypatch):
    """The buffer's ``buf[n:] = 0`` dropped (PR #34890): the release pads the live locations to
    the bucket before the refill and its captured stores never read the buffer, so the stale
    entries past the smaller bucket change no write. Only ``loc_buffer`` fails."""
    engine, _ = release
    monkeypatch.setattr(engine.RealBackend, "_fill_cuda_graph_swa_out_cache_loc",
                        _refill_keeping_the_tail)
    assert _fired(CASE) == {"loc_buffer"}


def test_a_refill_that_never_runs_is_seen_by_the_prepared_metadata(release, monkeypatch):
    """A prep that hands back the buffer's stale front without refilling it: the stores stay
    right (no captured store reads the buffer), the prepared stamp and buffer do not."""
    engine, _ = release

    def no_refill(self, loc):
        buf = self.cuda_graph_swa_out_cache_loc
        if buf is None or loc is None or loc.shape[0] > buf.shape[0]:
            return None
        return buf[:loc.shape[0]]

    monkeypatch.setattr(engine.RealBackend, "_fill_cuda_graph_swa_out_cache_loc", no_refill)
    fired = _fired(CASE)
    assert fired and not fired & STORE_CHECKS, fired
    assert fired <= {"prepared", "loc_buffer"}


def _lens_one_short(self, *, bs, qo_len, seq_lens, req_pool_indices):
    """Our broken expansion: every row's causal length one short (the request's own length
    never reached: ``seq_lens - qo_len .. seq_lens - 1``)."""
    casual = (seq_lens[:, None] + torch.arange(-qo_len, 0, dtype=seq_lens.dtype,
                                               device=seq_lens.device)).flatten()
    rows = torch.arange(bs, device=seq_lens.device).repeat_interleave(qo_len)
    return casual, req_pool_indices[rows]


def test_causal_lengths_one_short_are_seen_by_prepared(release, monkeypatch):
    """The bug class the seq-lens comparison is for, on every release with the prep (0.5.18 ..
    0.5.20 call ``make_core_attn_metadata`` without 0.5.21+'s ``num_groups``): the release's
    per-row causal lengths one short on every row. The captured stores write the same
    locations; ``prepared`` reports the request's length."""
    engine, _ = release
    monkeypatch.setattr(engine.RealBackend, "expand_extend_with_same_length", _lens_one_short)
    assert "prepared" in _fired(CASE)


def test_request_lengths_are_grouped_by_the_batch_not_by_num_groups(release):
    """The per-request lengths are each request's last row, grouped by the requests the prep
    was handed (0.5.19 passes no ``num_groups``); rows that do not divide come back whole."""
    _, metadata = release
    casual = torch.tensor([1, 2, 4, 5, 0, 1], dtype=torch.int32)  # 3 requests x 2 rows
    assert metadata.request_lens(casual, 3).tolist() == [2, 5, 1]
    assert metadata.request_lens(casual, 4).tolist() == [1, 2, 4, 5, 0, 1]
