"""Mutants of the DSpark draft block on a per-request SWA ring (feature ``ring_draft``, op
``draft_block``; addendum §2.1, §3, §5 R1/R4, §6 A4).

Each replaces :attr:`targets.engine.UnifiedEngine.draft_block_mixin` with a subclass overriding
one method of ``DraftBlockMixin`` (or its graph runner); only the ``ring_draft`` kind reaches them.
"""

from __future__ import annotations

import torch

from swafuzz.features.ring.ring_draft.engine import DraftBlockMixin, block_seq_lens_causal
from swafuzz.kernels.launch import capturing
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant
from swafuzz.targets.runners import DecodeGraphRunner

KINDS = ("ring_draft",)


class _ViaMapping(DraftBlockMixin):
    def block_rows(self, fb):
        return self.translate(fb.out_cache_loc)


@mutant("ring_draft_block_via_mapping", KINDS,
        "addendum §3 F, §6 A4, R4; sglang 0.5.23 _fill_cuda_graph_swa_out_cache_loc (PR #34890) "
        "translates through M with no ring branch", expected=("write_targets", "pool_bytes"))
class RingDraftBlockViaMapping(UnifiedEngine):
    """The block's rows translated through M (the paged stamp, as sglang 0.5.23's
    _fill_cuda_graph_swa_out_cache_loc fills the draft SWA buffer with no ring branch): M is all
    0 under a ring, so every row lands in row 0."""

    draft_block_mixin = _ViaMapping


class _NoMod(DraftBlockMixin):
    def block_rows(self, fb):
        rep = self.repeat_slots(self.block_slots(fb))
        pos = block_seq_lens_causal(fb.seq_lens, self.gamma) - 1
        return (rep * self.row_tables.ring + pos).to(torch.int32)


@mutant("ring_draft_block_no_mod", KINDS, "addendum §2.1 swa_ring_rows, §5 R1",
        expected=("write_targets", "pool_bytes", "redzones", "contracts"))
class RingDraftBlockNoMod(UnifiedEngine):
    """Block rows ``slot*R + pos`` without ``mod R``: a block past the ring's end spills into
    the next slot or past the buffer."""

    draft_block_mixin = _NoMod


class _SeqLens(DraftBlockMixin):
    def block_rows(self, fb):
        rep = self.repeat_slots(self.block_slots(fb))
        pos = block_seq_lens_causal(fb.seq_lens, self.gamma)
        R = self.row_tables.ring
        return (rep * R + pos % R).to(torch.int32)


@mutant("ring_draft_block_seq_lens", KINDS,
        "sglang 0.5.23 _dspark_swa_ring_out_cache_loc (row i at seq_lens_casual[i] - 1), "
        "addendum §2.1, §5 R1", expected=("write_targets", "pool_bytes", "write_set"))
class RingDraftBlockSeqLens(UnifiedEngine):
    """Row i at position ``seq_lens_casual[i]`` instead of ``seq_lens_casual[i] - 1``: every
    block row lands one ring row late."""

    draft_block_mixin = _SeqLens


class _Tiled(DraftBlockMixin):
    def repeat_slots(self, slots):
        return slots.repeat(self.gamma)


@mutant("ring_draft_block_tiled_slots", KINDS,
        "sglang 0.5.23 init_forward_metadata_in_graph (req_pool_indices.repeat_interleave("
        "block_size)), addendum §2.1, §5 R1", expected=("write_targets", "pool_bytes", "contracts"))
class RingDraftBlockTiledSlots(UnifiedEngine):
    """Per-row slots ``slots.repeat(gamma)`` (tiled) instead of ``repeat_interleave(gamma)``:
    with two or more requests rows get another request's slot."""

    draft_block_mixin = _Tiled


class _HostBaked(DraftBlockMixin):
    def block_rows(self, fb):
        if capturing() and getattr(self, "_host_const", None) is not None:
            return self._host_const
        vals = super().block_rows(fb).tolist()
        self._host_const = torch.tensor(vals, dtype=torch.int32, device=fb.seq_lens.device)
        self.baked["swa_out_cache_loc"] = vals
        return self._host_const


@mutant("ring_draft_block_host_baked", KINDS,
        "PR #38137 class, spec §2.7(e) (host-baked translation), on the DSpark block stamp "
        "(_dspark_swa_ring_out_cache_loc recorded in-graph)",
        expected=("write_targets", "pool_bytes", "capture_freeze", "agreement"))
class RingDraftBlockHostBaked(UnifiedEngine):
    """The block's rows computed on the host at the warm-up and reused as a constant in the
    captured graph: every replay writes the capture batch's rows (slot 0) and the real rows are
    lost (graph draft blocks only)."""

    draft_block_mixin = _HostBaked


class _PadFillZeroRunner(DecodeGraphRunner):
    def load_batch(self, fb, bs):
        super().load_batch(fb, bs)
        self.static_seq_lens[fb.batch_size:bs].fill_(0)


@mutant("ring_draft_block_pad_fill_0", KINDS,
        "sglang 0.5.23 DeepseekV4AttnBackend.get_cuda_graph_seq_len_fill_value (1) and "
        "cuda_graph_buffer_registry FILL_SENTINEL(seq_len_fill_value); addendum §4 decode bucket",
        expected=("write_targets", "pool_bytes"))
class RingDraftBlockPadFill0(UnifiedEngine):
    """The block graph pads requests with seq_lens 0 instead of the backend's fill value 1:
    padded rows start at position -1, ring row R - 1 of slot 0, outside page 0 when R > P (graph
    draft blocks only; pool_bytes sees it only when R > P)."""

    draft_block_runner_cls = _PadFillZeroRunner
