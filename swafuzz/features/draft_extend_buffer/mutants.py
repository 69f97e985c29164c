"""Mutant of the pre-allocated draft-extend SWA location buffer (feature
``draft_extend_buffer``; sglang PR #34890, spec §4.7); reached only by the
``draft_extend_buffer`` kind."""

from __future__ import annotations

from swafuzz.targets.backend import DSV4Backend
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
        expected=("write_targets", "pool_bytes", "capture_freeze", "agreement"))
class DraftExtendBufferTailKept(UnifiedEngine):
    """The draft-extend SWA location buffer refilled without ``buf[n:] = 0``: padded rows of a
    smaller replay write the slots a larger one left."""

    backend_cls = _TailKeptBackend
