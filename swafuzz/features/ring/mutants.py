"""Mutants of the per-request SWA ring (feature ``ring``; addendum §2.1, §3, §5 R1-R5, §6
A4/A11/A12): each swaps one component class of the engine for a subclass overriding one method,
changing nothing on a paged pool, so only the ``ring`` kind reaches them.
"""

from __future__ import annotations

import torch

from swafuzz.features.ring.engine import RingAllocator, slot_positions
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _FallbackTranslateBackend(DSV4Backend):
    def table_rows_fallback(self, fb):
        return self.translate(fb.out_cache_loc)


@mutant("ring_fallback_translate", ("ring",), "addendum §3 (F under a ring), §6 A4",
        expected=("write_targets", "pool_bytes"))
class RingFallbackTranslate(UnifiedEngine):
    """A resolver miss under a ring translates through M, which the ring allocator never writes:
    every row lands in ring row 0."""

    backend_cls = _FallbackTranslateBackend


class _DriftAllocator(RingAllocator):
    def free_swa(self, full_slots):
        pages = {f // self.page_size for f in full_slots}
        self.swa_paged_available += len(pages) * self.page_size


@mutant("ring_accounting_drift", ("ring",), "sglang #38571, addendum §6 A12, R5",
        expected=("invariants",))
class RingAccountingDrift(UnifiedEngine):
    """Freeing a ring request's SWA returns paged SWA pages it never took: the paged counter
    exceeds its size (R5)."""

    own_allocator_cls = _DriftAllocator


class _NoModBackend(DSV4Backend):
    def table_rows(self, loc, fb):
        t = self.row_tables
        slot, pos = slot_positions(t, loc, fb.positions)
        keep = pos > t.len_of_slot[slot] - 1 - t.window
        return torch.where(keep, slot * t.ring + pos, torch.full_like(pos, -1)).to(torch.int32)


@mutant("ring_no_mod", ("ring",), "addendum §2.1 (swa_ring_rows: pos mod ring), R1",
        expected=("write_targets", "pool_bytes", "redzones", "contracts"))
class RingNoMod(UnifiedEngine):
    """Ring row ``slot*R + pos`` without ``mod R``: rows past the ring spill into the next
    slot's ring or past the buffer (R1)."""

    backend_cls = _NoModBackend


class _SlotZeroAllocator(RingAllocator):
    def take_slot(self, rid):
        used = set(self.req_slot.values())
        s = min(set(range(0, self.pool.req_slots)) - used)
        self.free_slots.discard(s)
        return s


@mutant("ring_slot_zero", ("ring",), "ReqToTokenPool padding slot 0, addendum §2.1, R1",
        expected=("invariants", "pool_bytes", "write_targets"))
class RingSlotZero(UnifiedEngine):
    """Request slots handed out from 0: a real request shares the padding row's ring
    (ReqToTokenPool slot 0 is padding; R1)."""

    own_allocator_cls = _SlotZeroAllocator


class _UnguardedBackend(DSV4Backend):
    def store_skip_guard(self, loc):
        return loc


@mutant("ring_unguarded_store", ("ring",), "addendum §2.1 (negative rows), §6 A11",
        kernel_level=True, expected=("contracts",))
class RingUnguardedStore(UnifiedEngine):
    """``-1`` (skipped) ring rows reach the store kernel without the ``out_loc < 0`` skip
    (fused_store_cache has no guard)."""

    backend_cls = _UnguardedBackend


class _NoWindowSkipBackend(DSV4Backend):
    def table_rows(self, loc, fb):
        t = self.row_tables
        slot, pos = slot_positions(t, loc, fb.positions)
        return (slot * t.ring + pos % t.ring).to(torch.int32)


@mutant("ring_no_window_skip", ("ring",), "DSparkKVInject._ring_inject_loc window rule, "
        "addendum §2.1, R3", expected=("write_targets", "pool_bytes", "contracts"))
class RingNoWindowSkip(UnifiedEngine):
    """Ring rows without the ``-1`` window rule of the DSpark injection: positions older than
    the window are written and race newer ones mod R (R3)."""

    backend_cls = _NoWindowSkipBackend


class _WritesMappingAllocator(RingAllocator):
    def extend(self, plan):
        out = super().extend(plan)
        P = self.page_size
        for new in out:
            for f in new:
                if f % P == 0 and self.swa_free:
                    sp = min(self.swa_free)
                    self.swa_free.remove(sp)
                    self.mapping[f] = sp * P
                elif f % P and int(self.mapping[f - 1]) > 0:
                    self.mapping[f] = self.mapping[f - 1] + 1
        return out


@mutant("ring_alloc_writes_mapping", ("ring",), "sglang 0.5.23 SWATokenToKVPoolAllocator.alloc "
        "(page size 1, no ring branch), addendum §2.1, R4", expected=("invariants",))
class RingAllocWritesMapping(UnifiedEngine):
    """The ring allocator also pages SWA and writes M, as sglang's page-size-1 ``alloc`` does
    under a ring (no ring branch; ledger ring-p1-alloc-writes-mapping; the ring must never write
    M: R4, R5)."""

    own_allocator_cls = _WritesMappingAllocator
