"""The DSpark draft block on a per-request SWA ring (issue 12; Case op ``draft_block``,
features/ring/ring_draft/SEMANTICS.md; addendum §2.1, §4).

sglang 0.5.23 gives a draft model a ring only under DSpark (``uses_draft_swa_ring``), which runs
one TARGET_VERIFY-mode *draft block* per round whose SWA rows are
``swa_ring_rows(req_pool_indices.repeat_interleave(gamma), seq_lens_casual - 1, R)``,
``seq_lens_casual = seq_lens + 1..gamma`` (``_dspark_swa_ring_out_cache_loc``), stamped as
``swa_out_cache_loc`` and read by the resolver's cached branch. Wired by
:meth:`targets.engine.UnifiedEngine.step_draft_block`:

* :func:`block_seq_lens_causal`: int64 ``[bs * gamma]`` = ``seq_lens[b] + i + 1``;
* :func:`draft_block_rows`: int32 ``[bs * gamma]`` ``slot*R + (seq_lens_casual - 1) mod R`` (no
  ``-1`` rule: block rows are ahead of the window);
* :class:`DraftBlockMixin`: the in-graph op stamping those rows (slot read from the ring tables
  through the anchor location, for ``req_pool_indices``); :func:`run_draft_block`: the step.

The block batch (``rids`` order): ``out_cache_loc`` int64 the anchor (last full slot) ``gamma``
times, ``seq_lens`` int64 ``[bs]`` = ``L``, ``positions`` int64 ``L + i``. Device ops only, so
``exec: "graph"`` records the stamp in a TARGET_VERIFY :class:`targets.runners.DecodeGraphRunner`
of ``gamma`` rows per request; padded requests (loc 0, seq_lens 1) resolve to slot 0.
"""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.metadata import AttnMetadata
from swafuzz.targets.runners import DecodeGraphRunner

__all__ = ["DraftBlockMixin", "block_seq_lens_causal", "draft_block_rows", "run_draft_block"]


def block_seq_lens_causal(seq_lens: torch.Tensor, gamma: int) -> torch.Tensor:
    """int64 ``[bs * gamma]``: ``seq_lens[b] + i + 1`` for ``i < gamma`` (request-major)."""
    steps = torch.arange(1, gamma + 1, dtype=torch.int64, device=seq_lens.device)
    return (seq_lens.to(torch.int64)[:, None] + steps[None, :]).reshape(-1)


def draft_block_rows(slots_repeated: torch.Tensor, seq_lens_casual: torch.Tensor,
                     ring: int) -> torch.Tensor:
    """int32: ``slot * ring + (seq_lens_casual - 1) mod ring`` per block row."""
    pos = seq_lens_casual.to(torch.int64) - 1
    return (slots_repeated.to(torch.int64) * ring + pos % ring).to(torch.int32)


class DraftBlockMixin:
    """Mixed in front of an engine's backend class for the draft block (``gamma`` and ``row_tables``,
    the :class:`features.ring.engine.RingTables`, are set by :func:`run_draft_block`)."""

    gamma: int = 1

    def block_slots(self, fb: ForwardBatch) -> torch.Tensor:
        """int64 ``[bs]``: the request slot of each request (through its anchor location)."""
        return self.row_tables.slot_of_full[fb.out_cache_loc[::self.gamma]]

    def repeat_slots(self, slots: torch.Tensor) -> torch.Tensor:
        """Per block row: each request's slot ``gamma`` times (``repeat_interleave``)."""
        return slots.repeat_interleave(self.gamma)

    def block_rows(self, fb: ForwardBatch) -> torch.Tensor:
        """int32 ``[bs * gamma]`` ring rows of the block (``_dspark_swa_ring_out_cache_loc``)."""
        rep = self.repeat_slots(self.block_slots(fb))
        return draft_block_rows(rep, block_seq_lens_causal(fb.seq_lens, self.gamma),
                                self.row_tables.ring)

    def init_forward_metadata_in_graph(self, fb: ForwardBatch) -> None:
        super().init_forward_metadata_in_graph(fb)
        md = self.forward_metadata
        if isinstance(md, AttnMetadata):
            md.core_attn_metadata.swa_out_cache_loc = self.block_rows(fb)


def _block_backend(engine):
    b = getattr(engine, "_draft_block_backend", None)
    if b is None:
        cls = type("DraftBlockBackend", (engine.draft_block_mixin, engine.backend_cls), {})
        b = cls(engine.draft_pool, topk=engine.gcfg.topk, prep_in_graph=engine.gcfg.prep_in_graph)
        b.row_tables = engine.allocator.tables
        b.gamma = engine.gcfg.num_draft_tokens - 1
        engine._draft_block_backend = b
    return b


def run_draft_block(engine, i: int, s) -> list:
    """The ``draft_block`` step: one eager TARGET_VERIFY forward on the draft pool."""
    if not engine.cfg.swa_ring:
        raise ValueError("draft_block needs a per-request SWA ring (pool.swa_ring > 0)")
    backend = _block_backend(engine)
    gamma = backend.gamma
    locs, lens, pos = [], [], []
    for rid in s.rids:
        toks = engine.allocator.tokens[rid]
        n = len(toks)
        locs += [toks[-1]] * gamma
        lens.append(n)
        pos += range(n, n + gamma)
    dev = engine.device

    def t(v):
        return torch.tensor(v, dtype=torch.int64, device=dev)

    fb = ForwardBatch(ForwardMode.TARGET_VERIFY, len(s.rids), t(locs), t(lens), t(pos))
    if engine.use_graph(s, len(s.rids)):
        if "draft_block" not in engine._runners:
            runner_cls = getattr(engine, "draft_block_runner_cls", DecodeGraphRunner)
            engine._runners["draft_block"] = runner_cls(
                engine.draft_model, backend, engine.executor, engine.gcfg.buckets,
                tokens_per_req=gamma, capture_mode=ForwardMode.TARGET_VERIFY)
        return engine.graph_forward(i, "draft", "draft_block", fb, len(locs), "TARGET_VERIFY")
    return [engine.eager_forward(i, "draft", backend, fb, len(locs))]


class RingDraftEngine(EnginePart):
    """The engine part: the ``draft_block`` step and its backend mixin."""

    draft_block_mixin = DraftBlockMixin
    draft_block = staticmethod(run_draft_block)


class RingDraftSGLang(SGLangPart):
    """The ``sglang`` part: the release's draft block mixin."""

    draft_block_mixin = lazy("swafuzz.features.ring.ring_draft.sglang:SGLangDraftBlockMixin")
