"""Mutant of the pre-allocated draft-extend SWA location buffer (feature
``draft_extend_buffer``; sglang PR #34890, spec §4.7); reached only by the
``draft_extend_buffer`` kind."""

from __future__ import annotations

from swafuzz.targets.backend import DSV4Backend, pad_loc
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _TailKeptBackend(DSV4Backend):
    def refill_swa_loc_buffer(self, loc):
        """Refill without zeroing the tail: entries past ``n`` keep a larger replay's slots."""
        buf, n = self.swa_loc_buffer, loc.numel()
        if n > buf.numel():
            return None
        buf[:n] = self.translate(loc)
        return buf[:n]


@mutant("draft_extend_buffer_tail_kept", ("draft_extend_buffer",), "sglang PR #34890 (the "
        "draft-extend SWA loc buffer refilled outside the graph: buf[n:] = 0, spec §4.7); the "
        "PR #24743 class (padded rows not zeroed)",
        expected=("loc_buffer", "write_targets", "pool_bytes", "capture_freeze", "agreement"))
class DraftExtendBufferTailKept(UnifiedEngine):
    """The draft-extend SWA location buffer refilled without ``buf[n:] = 0``: padded rows of a
    smaller replay write the slots a larger one left."""

    backend_cls = _TailKeptBackend


class _PaddedRefillBackend(_TailKeptBackend):
    """The refill without ``buf[n:] = 0`` (entries past the bucket keep a larger replay's
    slots) after the live locations are padded to the bucket's rows."""

    def out_graph_draft_extend(self, fb, bs, loc, seq_lens):
        """As sglang 0.5.23's prep: the live locations padded with 0 to the bucket's rows
        before the refill (so the refill covers every row the captured stores read)."""
        if loc is not None:
            loc = pad_loc(loc, bs * self.draft_extend_tokens_per_bs, "out_graph draft_extend")
        return super().out_graph_draft_extend(fb, bs, loc, seq_lens)


@mutant("draft_extend_buffer_tail_unzeroed", ("draft_extend_buffer",), "sglang PR #34890 "
        "(_fill_cuda_graph_swa_out_cache_loc zeroes buf[n:]) with sglang 0.5.23 "
        "init_forward_metadata_out_graph padding the live locations to the bucket's rows "
        "before the refill; spec §4.7; the PR #24743 class (padded entries not zeroed)",
        expected=("loc_buffer",))
class DraftExtendBufferTailUnzeroed(UnifiedEngine):
    """The refill of the bucket's padded rows leaves the buffer past them as a larger bucket's
    replay left it: no captured store reads those entries, so every write stays right -
    latent until a consumer reads the buffer beyond the bucket."""

    backend_cls = _PaddedRefillBackend
