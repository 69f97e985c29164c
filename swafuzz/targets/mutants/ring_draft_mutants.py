"""Mutants of the DSpark draft block on a per-request SWA ring (issue 12; Case op
``draft_block``, features/ring_draft/SEMANTICS.md "DSpark draft block on a ring"; addendum §2.1, §3, §5 R1/R4,
§6 A4). Each swaps the engine's :attr:`targets.engine.UnifiedEngine.draft_block_mixin` for a
subclass overriding one method of :class:`targets.ring_draft.DraftBlockMixin`; only a
``draft_block`` step runs that mixin, so only the ``ring_draft`` scenario kind reaches them.

==  ============================  ========================================  =====================
#   name                          bug (source)                              caught by (expected)
==  ============================  ========================================  =====================
50  ring_draft_block_via_mapping  the block's rows translated through M     write_targets,
                                  (the paged stamp; as sglang 0.5.23's      pool_bytes
                                  _fill_cuda_graph_swa_out_cache_loc fills
                                  the draft SWA buffer with no ring
                                  branch): M is all 0 under a ring, every
                                  row lands in row 0 (addendum §3 F, §6 A4,
                                  R4)
51  ring_draft_block_no_mod       block rows ``slot*R + pos`` without       write_targets,
                                  ``mod R`` (swa_ring_rows, addendum §2.1,  pool_bytes, redzones
                                  R1): a block past the ring's end spills
                                  into the next slot or past the buffer
52  ring_draft_block_seq_lens     row i at position ``seq_lens_casual[i]``  write_targets,
                                  instead of ``seq_lens_casual[i] - 1``     pool_bytes
                                  (_dspark_swa_ring_out_cache_loc: "row i
                                  sits at position seq_lens_casual[i] -
                                  1"; R1)
53  ring_draft_block_tiled_slots  per-row slots ``slots.repeat(gamma)``     write_targets,
                                  (tiled) instead of                        pool_bytes
                                  ``repeat_interleave(gamma)``: with two
                                  or more requests rows get another
                                  request's slot (upstream
                                  init_forward_metadata_in_graph builds
                                  req_pool_indices_repeated with
                                  repeat_interleave(block_size); R1)
54  ring_draft_block_host_baked   the block's rows computed on the host at  write_targets,
                                  the warm-up and reused as a constant in   pool_bytes,
                                  the captured graph: every replay writes   capture_freeze
                                  the capture batch's rows (slot 0), the
                                  real rows are lost (PR #38137 class,
                                  spec §2.7(e), on the DSpark block stamp;
                                  graph draft blocks only)
55  ring_draft_block_pad_fill_0   the block graph pads requests with        write_targets
                                  seq_lens 0 instead of the backend's fill  (padded rows), and
                                  value 1 (get_cuda_graph_seq_len_fill_     pool_bytes when
                                  value, the registry's FILL_SENTINEL):     R > P
                                  padded rows start at position -1, ring
                                  row R - 1 of slot 0, outside page 0 when
                                  R > P (addendum §4 decode bucket
                                  "seq fill 1"; graph draft blocks only)
==  ============================  ========================================  =====================
"""

from __future__ import annotations

import torch

from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant
from swafuzz.targets.ring_draft import DraftBlockMixin, block_seq_lens_causal
from swafuzz.targets.runners import DecodeGraphRunner

KINDS = ("ring_draft",)


# 50 -----------------------------------------------------------------------------------------
class _ViaMapping(DraftBlockMixin):
    def block_rows(self, fb):
        """The paged stamp: ``int32(M[out_cache_loc])`` (M is never written under a ring)."""
        return self.translate(fb.out_cache_loc)


@mutant("ring_draft_block_via_mapping", KINDS,
        "addendum §3 F, §6 A4, R4; sglang 0.5.23 _fill_cuda_graph_swa_out_cache_loc (PR #34890) "
        "translates through M with no ring branch")
class RingDraftBlockViaMapping(UnifiedEngine):
    draft_block_mixin = _ViaMapping


# 51 -----------------------------------------------------------------------------------------
class _NoMod(DraftBlockMixin):
    def block_rows(self, fb):
        """``slot*R + pos`` without ``mod R``."""
        rep = self.repeat_slots(self.block_slots(fb))
        pos = block_seq_lens_causal(fb.seq_lens, self.gamma) - 1
        return (rep * self.ring.ring + pos).to(torch.int32)


@mutant("ring_draft_block_no_mod", KINDS, "addendum §2.1 swa_ring_rows, §5 R1")
class RingDraftBlockNoMod(UnifiedEngine):
    draft_block_mixin = _NoMod


# 52 -----------------------------------------------------------------------------------------
class _SeqLens(DraftBlockMixin):
    def block_rows(self, fb):
        """Position ``seq_lens_casual`` (one past the row's position)."""
        rep = self.repeat_slots(self.block_slots(fb))
        pos = block_seq_lens_causal(fb.seq_lens, self.gamma)
        R = self.ring.ring
        return (rep * R + pos % R).to(torch.int32)


@mutant("ring_draft_block_seq_lens", KINDS,
        "sglang 0.5.23 _dspark_swa_ring_out_cache_loc (row i at seq_lens_casual[i] - 1), "
        "addendum §2.1, §5 R1")
class RingDraftBlockSeqLens(UnifiedEngine):
    draft_block_mixin = _SeqLens


# 53 -----------------------------------------------------------------------------------------
class _Tiled(DraftBlockMixin):
    def repeat_slots(self, slots):
        """``slots.repeat(gamma)``: request-minor order."""
        return slots.repeat(self.gamma)


@mutant("ring_draft_block_tiled_slots", KINDS,
        "sglang 0.5.23 init_forward_metadata_in_graph (req_pool_indices.repeat_interleave("
        "block_size)), addendum §2.1, §5 R1")
class RingDraftBlockTiledSlots(UnifiedEngine):
    draft_block_mixin = _Tiled


# 54 -----------------------------------------------------------------------------------------
class _HostBaked(DraftBlockMixin):
    def block_rows(self, fb):
        """Rows computed on the host when not capturing (the warm-up) and the constant reused
        inside the captured graph."""
        from swafuzz.kernels.launch import capturing

        if capturing() and getattr(self, "_host_const", None) is not None:
            return self._host_const
        vals = super().block_rows(fb).tolist()
        self._host_const = torch.tensor(vals, dtype=torch.int32, device=fb.seq_lens.device)
        self.baked["swa_out_cache_loc"] = vals
        return self._host_const


@mutant("ring_draft_block_host_baked", KINDS,
        "PR #38137 class, spec §2.7(e) (host-baked translation), on the DSpark block stamp "
        "(_dspark_swa_ring_out_cache_loc recorded in-graph)")
class RingDraftBlockHostBaked(UnifiedEngine):
    draft_block_mixin = _HostBaked


# 55 -----------------------------------------------------------------------------------------
class _PadFillZeroRunner(DecodeGraphRunner):
    def load_batch(self, fb, bs):
        """Padded requests get seq_lens 0 (not the DSV4 backend's fill value 1)."""
        super().load_batch(fb, bs)
        self.static_seq_lens[fb.batch_size:bs].fill_(0)


@mutant("ring_draft_block_pad_fill_0", KINDS,
        "sglang 0.5.23 DeepseekV4AttnBackend.get_cuda_graph_seq_len_fill_value (1) and "
        "cuda_graph_buffer_registry FILL_SENTINEL(seq_len_fill_value); addendum §4 decode bucket")
class RingDraftBlockPadFill0(UnifiedEngine):
    draft_block_runner_cls = _PadFillZeroRunner
