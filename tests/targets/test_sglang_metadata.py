"""The ``sglang`` target's real draft-extend prep and per-step draft helper
(``targets/sglang/metadata.py``; issue 9, item 6).

Marker ``upstream``: run in an environment built by ``scripts/upstream-env VERSION``; every test
skips with its reason when sglang is absent, and the 0.5.23-only ones on 0.5.12 (whose
draft-extend metadata carries no SWA write location and which has no per-step helper).
Reproduce: ``scripts/upstream-check 0.5.23`` or, in ``.venv-sglang-0.5.23``,
``pytest -m upstream tests/targets/test_sglang_metadata.py``.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

pytestmark = [
    pytest.mark.upstream,
    pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                       reason="sglang is not installed (build an environment with "
                              "scripts/upstream-env VERSION)"),
]

# two graph draft-extends in bucket 2 (the second with fewer live rows), then an eager one
BUF = Case(
    pool=PoolConfig(full_pages=16, swa_pages=16, window=12),
    graph=GraphConfig(buckets=(2,), topk=1, num_draft_tokens=2, draft_extend_buffer=True),
    kind="draft_extend_buffer",
    steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=3),
           Step("draft_extend", rids=(0, 1), accept=(2, 2), exec="graph"),
           Step("draft_extend", rids=(0,), accept=(1,), exec="graph"),
           Step("draft_extend", rids=(1, 0), accept=(2, 2))))

# multi-step draft decode (topk 2, 3 steps): eager, then graph
MULTI = Case(
    pool=PoolConfig(page_size=2, full_pages=24, swa_pages=24, window=12),
    graph=GraphConfig(buckets=(1, 2), topk=2, num_steps=3, num_draft_tokens=2),
    kind="multi_step_draft",
    steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=2),
           Step("draft_decode", rids=(0, 1)), Step("draft_decode", rids=(1, 0), exec="graph")))


@pytest.fixture
def release():
    from swafuzz.targets.sglang import engine, metadata, real

    if not metadata.REAL_DRAFT_EXTEND:
        pytest.skip(f"sglang {real.VERSION}: no draft-extend SWA location prep (0.5.23 only)")
    return engine, metadata


def test_draft_extend_prep_is_the_releases(release, monkeypatch):
    """Capture hands the release's prep no locations; every replay, the live locations padded
    to the bucket's rows; the eager draft-extend calls its builder too; the buffer ends up
    holding int32(M[padded loc]) from the release's fill."""
    from swafuzz.harness.executors import get_executor
    from swafuzz.harness.pipeline.execute import execute

    engine, _ = release
    seen: dict[str, list] = {"fill": [], "build": []}
    fill, build = (engine.RealBackend._fill_cuda_graph_swa_out_cache_loc,
                   engine.RealBackend.init_forward_metadata_draft_extend)

    def spy_fill(self, loc):
        seen["fill"].append(None if loc is None else loc.tolist())
        return fill(self, loc)

    def spy_build(self, **kw):
        seen["build"].append(kw["num_tokens_per_req"])
        return build(self, **kw)

    monkeypatch.setattr(engine.RealBackend, "_fill_cuda_graph_swa_out_cache_loc", spy_fill)
    monkeypatch.setattr(engine.RealBackend, "init_forward_metadata_draft_extend", spy_build)
    eng = engine.SGLangEngine(BUF, "torch", get_executor("tape"))
    obs = eng.run()
    assert obs.error is None, obs.error
    fills = seen["fill"]
    assert fills[0] is None  # capture: no locations (the bucket's synthetic prep)
    assert len(fills) == 4 and all(len(f) == 4 for f in fills[1:3])  # replays: 2 req x 2 rows
    step3 = fills[2]
    assert step3[1:] == [0, 0, 0] and step3[0] > 0  # one live row, padded with 0
    assert len(fills[3]) == 4  # the eager draft-extend: its live rows, unpadded
    assert seen["build"] == [2, 2, 2, 2]
    mapping = eng.allocator.mapping
    buf = eng.draft_extend_backend.swa_loc_buffer
    assert buf.tolist() == [int(mapping[x]) for x in fills[3]]
    assert not execute(BUF, "sglang", "torch", ["eager", "tape"]).failures


def _no_refill(self, loc):
    """A prep that forgets to refill: hands back the buffer's stale front."""
    buf = self.cuda_graph_swa_out_cache_loc
    if buf is None or loc is None or loc.shape[0] > buf.shape[0]:
        return None
    return buf[:loc.shape[0]]


def test_the_release_never_stores_through_the_buffer(release, monkeypatch):
    """0.5.23 reads its draft-extend buffer nowhere on this write path: capture has no
    locations, so the captured store translates the live locations itself, and the eager
    in-graph stamp replaces the buffer view. A prep that never refills the buffer therefore
    changes no write on 0.5.23 - only the prepared metadata (issue 18: the ``prepared`` stamp and
    the ``loc_buffer`` check) shows it - while the engine model, whose PR-era prep stamps the
    buffer at capture, is caught by the same omission in its writes."""
    from swafuzz.harness.pipeline.execute import execute
    from swafuzz.targets.backend import DSV4Backend

    engine, _ = release
    monkeypatch.setattr(engine.RealBackend, "_fill_cuda_graph_swa_out_cache_loc", _no_refill)
    fired = {f.check for f in execute(BUF, "sglang", "torch", ["eager", "tape"]).failures}
    assert fired and fired <= {"prepared", "loc_buffer"}, fired

    def model_no_refill(self, loc):
        buf, n = self.swa_loc_buffer, loc.numel()
        return None if n > buf.numel() else buf[:n]

    monkeypatch.setattr(DSV4Backend, "refill_swa_loc_buffer", model_no_refill)
    fired = {f.check for f in execute(BUF, "unified", "torch", ["eager", "tape"]).failures}
    assert "write_targets" in fired


def test_the_per_step_write_targets_come_from_the_release(release, monkeypatch):
    """The engine's per-step write targets (the EAGLE worker's side, eager and graph) and the
    backend's in-graph stamp both read the release's ``per_step_draft_out_cache_loc``. Swap it
    for a step-major reading of the same buffer: the multi-step draft stores land elsewhere and
    the checks fail (eager and graph)."""
    from swafuzz.harness.pipeline.execute import execute

    engine, metadata = release
    assert engine.SGLangEngine.per_step_loc is metadata.per_step_loc
    assert engine.SGLangEngine.multistep_runner_cls.per_step_loc is metadata.per_step_loc
    assert not execute(MULTI, "sglang", "torch", ["eager", "tape"]).failures

    def step_major(loc, bs, topk, steps):
        return loc.view(steps, bs * topk)

    monkeypatch.setattr(metadata, "_real_per_step", step_major)
    monkeypatch.setattr(engine.backend_mod, "per_step_draft_out_cache_loc", step_major)
    for ex in ("eager", "tape"):
        v = execute(MULTI, "sglang", "torch", [ex])
        assert "write_targets" in {f.check for f in v.failures}, ex


def test_eager_draft_extend_routes_through_the_release(release, monkeypatch):
    """The eager draft-extend (plain and DP-rewritten to EXTEND) builds its metadata with the
    release's builder: make it raise and the run reports it."""
    from swafuzz.targets.sglang import engine as eng_mod

    def boom(self, **kw):
        raise RuntimeError("release draft-extend builder reached")

    monkeypatch.setattr(eng_mod.RealBackend, "init_forward_metadata_draft_extend", boom)
    eager = dataclasses.replace(BUF, steps=BUF.steps[:2] + BUF.steps[4:])
    obs = eng_mod.SGLangEngine(eager, "torch").run()
    assert obs.error is not None and obs.error["message"] == "release draft-extend builder reached"
    dp = dataclasses.replace(eager, kind="dp_spec", steps=eager.steps[:2] + (
        Step("draft_extend", rids=(1, 0), accept=(2, 1), rank_tokens=(6,), dp_extend=True),))
    obs = eng_mod.SGLangEngine(dp, "torch").run()
    assert obs.error is not None and obs.error["message"] == "release draft-extend builder reached"
