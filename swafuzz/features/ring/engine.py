"""The per-request SWA ring of the engine model (addendum §1, §2.1; Case: ``pool.swa_ring``).

SWA KV is addressed by request slot, not ``M``: slot ``s`` owns rows ``[s*R, (s+1)*R)``,
position ``p`` at ``s*R + p mod R`` (sglang 0.5.20+ ``swa_req_ring_size``). Wired by
:class:`targets.engine.UnifiedEngine` when ``pool.swa_ring > 0``:

* :class:`RingAllocator`: the paged full side (lowest free page), request slots
  ``1..req_slots`` (0 is the ``ReqToTokenPool`` padding row; lowest free first), ``M`` never
  written, ``free_swa`` a no-op; ring accounting of ``SWATokenToKVPoolAllocator``
  (``available_size`` = full side, ``swa_available_size`` = free slots * ``ceil(R/P)*P``).
  Device tables, updated in place so graphs read live values, standing in for a batch's
  ``req_pool_indices`` / ``seq_lens``: ``slot_of_full`` int64 ``[mapping_len]`` (0: padding),
  ``len_of_slot`` int64 ``[req_slots + 1]`` (0: free).
* :func:`ring_rows`: int32 ``[N]`` rows of ``N`` full locations, ``-1`` for a position at or
  before ``len - 1 - window`` (``_ring_inject_loc``); padding rows (slot 0) -> row 0. Device
  ops only (replayed inside graphs).
* :func:`skip_negative_rows`: the store's ``out_loc < 0`` skip (sglang 0.5.16+) without a host
  sync: those rows go to ring row 0, which no check compares.
"""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.features.ring.channel import CHANNEL
from swafuzz.features.ring.rules import has_ring
from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.allocator import AllocationError, SWAAllocator


class RingTables:
    """The device tables the ring write path reads (see the module docstring)."""

    def __init__(self, pool: PoolConfig, device: torch.device):
        self.ring = pool.swa_ring
        self.window = pool.window
        self.slot_of_full = torch.zeros(pool.mapping_len, dtype=torch.int64, device=device)
        self.len_of_slot = torch.zeros(pool.req_slots + 1, dtype=torch.int64, device=device)


def slot_positions(tables: RingTables, loc: torch.Tensor, positions: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The request slot owning each full location ``loc`` (int64 ``[N]``) and its position
    (the first ``N`` of ``positions``; 0 for a padding row, slot 0: the padding policy ZERO)."""
    slot = tables.slot_of_full[loc]
    return slot, torch.where(slot > 0, positions[:loc.shape[0]], torch.zeros_like(slot))


def ring_rows(tables: RingTables, loc: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """int32 ``[N]``: ``slot*R + pos mod R`` or ``-1`` (``pos <= len - 1 - window``) for the
    full locations ``loc`` (int64 ``[N]``) at ``positions`` (int64, at least ``N`` entries; the
    first ``N`` are used)."""
    slot, pos = slot_positions(tables, loc, positions)
    final = tables.len_of_slot[slot] - 1
    row = slot * tables.ring + pos % tables.ring
    keep = pos > final - tables.window
    return torch.where(keep, row, torch.full_like(row, -1)).to(torch.int32)


def skip_negative_rows(loc: torch.Tensor) -> torch.Tensor:
    """The store's ``out_loc < 0`` skip: ``-1`` rows go to the padding row 0 instead."""
    return torch.where(loc >= 0, loc, torch.zeros_like(loc))


class RingAllocator(SWAAllocator):
    """Full-side paging + request slots + ring accounting (see the module docstring)."""

    def __init__(self, pool: PoolConfig, device: torch.device | str = "cpu"):
        super().__init__(pool, device)
        self.ring = pool.swa_ring
        self.tables = RingTables(pool, self.device)
        self.free_slots: set[int] = set(range(1, pool.req_slots + 1))
        self.req_slot: dict[int, int] = {}
        self.swa_paged_available = pool.swa_pages * pool.page_size  # never drawn from

    # -- accounting -----------------------------------------------------------------------------
    def ring_cost(self) -> int:
        P = self.page_size
        return (self.ring + P - 1) // P * P

    def available_size(self) -> int:
        return len(self.full_free) * self.page_size

    def swa_available_size(self) -> int:
        return len(self.free_slots) * self.ring_cost()

    def step_channels(self) -> dict:
        """The ring channel: :meth:`ring_state` (``StepObs.channels``)."""
        return {CHANNEL: self.ring_state()}

    def ring_state(self) -> dict:
        """The ring state a StepObs exposes in the ring channel (:mod:`features.ring.channel`)."""
        return {"slots": dict(self.req_slot), "free_slots": sorted(self.free_slots),
                "available": self.available_size(),
                "swa_available": self.swa_available_size(),
                "swa_paged_available": self.swa_paged_available,
                "swa_paged_size": self.pool.swa_pages * self.page_size}

    # -- slots ----------------------------------------------------------------------------------
    def take_slot(self, rid: int) -> int:
        if not self.free_slots:
            raise AllocationError(f"admit: no free request slot for request {rid}")
        s = min(self.free_slots)
        self.free_slots.remove(s)
        return s

    def admit(self, rid: int, length: int) -> list[int]:
        if rid in self.tokens:
            raise AllocationError(f"admit: request {rid} already exists")
        self.req_slot[rid] = self.take_slot(rid)
        try:
            return super().admit(rid, length)
        except AllocationError:
            self.free_slots.add(self.req_slot.pop(rid))
            raise

    # -- allocation: full side only, M untouched ---------------------------------------------
    def extend(self, plan: list[tuple[int, int]]) -> list[list[int]]:
        P = self.page_size
        pages = self.fresh_pages(plan)
        if pages > len(self.full_free):
            raise AllocationError(f"extend: the step needs {pages} fresh full pages but only "
                                  f"{len(self.full_free)} are free")
        out: list[list[int]] = []
        owners: list[int] = []
        fulls: list[int] = []
        for rid, n in plan:
            toks = self.tokens[rid]
            new = []
            for _ in range(n):
                if len(toks) % P:
                    full = toks[-1] + 1
                else:
                    fp = min(self.full_free)
                    self.full_free.remove(fp)
                    full = fp * P
                toks.append(full)
                new.append(full)
            fulls += new
            owners += [self.req_slot[rid]] * len(new)
            out.append(new)
        self.update_tables(fulls, owners)
        return out

    def update_tables(self, fulls: list[int], owners: list[int]) -> None:
        """In place: ``slot_of_full[fulls] = owners``; ``len_of_slot`` of every live slot."""
        dev = self.device
        if fulls:
            self.tables.slot_of_full[torch.tensor(fulls, dtype=torch.int64, device=dev)] = \
                torch.tensor(owners, dtype=torch.int64, device=dev)
        lens = [0] * self.tables.len_of_slot.numel()
        for rid, s in self.req_slot.items():
            lens[s] = len(self.tokens.get(rid, ()))
        self.tables.len_of_slot.copy_(torch.tensor(lens, dtype=torch.int64, device=dev))

    def free_swa(self, full_slots: list[int]) -> None:
        """A ring owns no paged SWA peers: nothing to free, ``M`` untouched."""

    def finish(self, rid: int) -> None:
        toks = self.tokens[rid]
        super().finish(rid)  # free_swa (no-op), then the full pages
        self.free_slots.add(self.req_slot.pop(rid))
        if toks:
            idx = torch.tensor(toks, dtype=torch.int64, device=self.device)
            self.tables.slot_of_full[idx] = 0
        self.update_tables([], [])


class RingEngine(EnginePart):
    """The engine part: the ring allocator of a Case with a ring and its store rows."""

    allocator = RingAllocator
    uses_allocator = staticmethod(has_ring)
    store_rows = staticmethod(ring_rows)
    store_skip = staticmethod(skip_negative_rows)


class RingSGLang(SGLangPart):
    """The ``sglang`` part: the release's ring allocator, its row stamp, the pool attributes."""

    allocator = lazy("swafuzz.features.ring.sglang:SGLangRingAllocator")
    post_metadata_stamp = lazy("swafuzz.features.ring.sglang:stamp_ring_rows")

    @staticmethod
    def real_pool(pool_obj, config) -> None:
        """``swa_req_ring_size``: the Case's ring rows per request slot (``pool.swa_ring``),
        None without a ring (0.5.20+ reads it; every release's pool object gets it)."""
        pool_obj.swa_req_ring_size = config.swa_ring or None
