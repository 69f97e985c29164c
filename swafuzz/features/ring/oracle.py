"""Ring oracle: what a Case with a per-request SWA ring (``pool.swa_ring > 0``) must have done.

Plain Python (never ``targets/``, ``kernels/`` or torch): the rules of
``features/ring/SEMANTICS.md`` (addendum §1, §2.1, §5 R1-R5) over the paged shadow of
:mod:`oracles.shadow` (same forwards and row counts), replacing what the ring changes:

* request slots ``1..req_slots``: exact mode hands out the lowest free at ``admit``; observed
  mode (``observed_ring``) validates the target's (free, in range, never 0) and follows it;
  ``finish`` frees it;
* allocation pages the full side only; ``M`` is never written (a nonzero observed SWA peer is
  R4); ``evict`` / ``free_swa`` free nothing;
* the write row of request ``rid`` (slot ``s``) at position ``p`` is ``-1`` when ``p <=
  len(tokens[rid]) - 1 - window`` (R3) else ``s * R + p % R`` (R1); the ring storage is
  ``swa_slots`` rows (``ceil((S+1)*R/P)`` pages), rows below P (page 0) never compared.

:func:`ring_invariants`: the ``invariants`` check's rules (R4, R5, R1's slot rules) over a ring
engine's exposed state and the Case.
"""

from __future__ import annotations

from swafuzz.features.parts import OraclePart
from swafuzz.features.ring.channel import observed_states
from swafuzz.features.ring.ring_draft.oracle import draft_block_forward
from swafuzz.oracles.errors import AllocationRejected, CaseInfeasible
from swafuzz.oracles.shadow import Shadow
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.payload import rows_bytes

__all__ = ["RingShadow", "ring_cost", "ring_invariants", "ring_row"]


def ring_cost(ring: int, page_size: int) -> int:
    """SWA tokens one request slot's ring costs the allocator: ``ceil(R/P) * P``."""
    return (ring + page_size - 1) // page_size * page_size


def ring_row(slot: int, pos: int, final_pos: int, ring: int, window: int) -> int:
    """The ring row of position ``pos`` of the request in ``slot`` whose last position in the
    forward's batch is ``final_pos``: ``-1`` outside the last ``window`` positions."""
    if pos <= final_pos - window:
        return -1
    return slot * ring + pos % ring


class RingShadow(Shadow):
    """The paged shadow with the ring rules (see the module docstring). ``observed_ring``: per
    step the target's exposed ring state, ``{"slots": {rid: slot}, ...}``, whose slot choices
    are validated and followed in observed mode."""

    TARGET = "ring row"

    def __init__(self, case: Case, observed_alloc=None, observed_ring=None, window_of=None):
        super().__init__(case, observed_alloc, window_of)
        cfg = case.pool
        if cfg.swa_ring < max(cfg.window, cfg.page_size) or cfg.req_slots < 1:
            raise CaseInfeasible(-1, f"pool.swa_ring = {cfg.swa_ring} must be >= window and >= "
                                     f"page_size, with req_slots >= 1 (got {cfg.req_slots})")
        if case.graph.draft_extend_buffer:
            raise CaseInfeasible(-1, "graph.draft_extend_buffer is not allowed with a ring")
        self.R = cfg.swa_ring
        self.free_slots = set(range(1, cfg.req_slots + 1))
        self.slot: dict[int, int] = {}
        self.owner: dict[int, tuple[int, int]] = {}  # full slot -> (rid, position)
        self.observed_ring = observed_ring

    # ------------------------------------------------------------------ slots
    def _take_slot(self, i: int, rid: int) -> None:
        if not self.free_slots:
            raise CaseInfeasible(i, f"request {rid}: no free request slot (req_slots = "
                                    f"{self.cfg.req_slots}, all held)")
        if self.observed_ring is None or i >= len(self.observed_ring):
            s = min(self.free_slots)
        else:
            table = (self.observed_ring[i] or {}).get("slots", {})
            got = {int(k): v for k, v in table.items()}.get(rid)
            if not isinstance(got, int):
                raise AllocationRejected(i, f"request {rid}: the target exposes no request slot "
                                            "for it after its admit")
            if got == 0:
                raise AllocationRejected(i, f"request {rid} got request slot 0, the padding row "
                                            "(ReqToTokenPool slot 0 is never handed out)")
            if got not in self.free_slots:
                raise AllocationRejected(i, f"request {rid} got request slot {got}, which was "
                                            f"not free (slots are 1..{self.cfg.req_slots})")
            s = got
        self.free_slots.discard(s)
        self.slot[rid] = s

    # ------------------------------------------------------------------ allocator
    def check_alloc(self, i: int, plan: list[tuple[int, int]]) -> None:
        need = 0
        for rid, n in plan:
            ln = len(self.tokens.get(rid, []))
            need += sum(1 for q in range(ln, ln + n) if q % self.P == 0)
        if need > len(self.free_full):
            raise CaseInfeasible(i, f"needs {need} fresh full pages, {len(self.free_full)} free")

    def extend(self, rid: int, n: int) -> list[int]:
        toks, P, i = self.tokens[rid], self.P, self.step_i
        new = []
        for _ in range(n):
            q = len(toks)
            got = self.next_observed(rid, q) if self.pending is not None else None
            if got is not None and got[1] != 0:
                raise AllocationRejected(i, f"request {rid} position {q}: the allocator wrote "
                                            f"M[{got[0]}] = {got[1]}; a ring allocator never "
                                            "writes the full->SWA mapping (R4)")
            if q % P:
                full = toks[-1] + 1
                if got is not None and got[0] != full:
                    raise AllocationRejected(i, f"request {rid} position {q} continues its last "
                                                f"page: expected full slot {full}, the allocator "
                                                f"gave {got[0]}")
            else:
                if got is None:
                    fp = min(self.free_full)
                else:
                    if got[0] % P or got[0] // P == 0 or got[0] // P not in self.free_full:
                        raise AllocationRejected(i, f"request {rid} position {q} (a page "
                                                    f"boundary): full slot {got[0]} is not offset "
                                                    "0 of a free full page (pages 1.."
                                                    f"{self.cfg.full_pages})")
                    fp = got[0] // P
                self.free_full.discard(fp)
                full = fp * P
            toks.append(full)
            new.append(full)
            self.owner[full] = (rid, q)
        return new

    def free_swa_slots(self, slots: list[int]) -> None:
        """A ring owns no paged SWA peers: nothing is freed, ``M`` stays 0."""

    # ------------------------------------------------------------------ forwards
    def targets_of(self, locs: list[int]) -> list[int]:
        """Ring rows (R1, R3): ``-1`` outside the request's last ``window`` positions."""
        w = self.cfg.window
        targets = []
        for f in locs:
            rid, pos = self.owner[f]
            targets.append(ring_row(self.slot[rid], pos, len(self.tokens[rid]) - 1, self.R, w))
        return targets

    def payload(self, i: int, fwd: int, pool: str, layer: int, n: int) -> bytes:
        return rows_bytes(self.case.payload_seed, i, fwd, pool, layer, n, self.cfg.row_bytes)

    def refused(self) -> bool:
        return False  # a ring Case runs every step (the ring loop never stopped at a refusal)

    # ------------------------------------------------------------------ steps
    def run_op(self, i: int, s) -> None:
        if s.op == "draft_decode":
            raise CaseInfeasible(i, "draft_decode is not supported with a ring")
        if s.op == "draft_block":  # DSpark draft block (issue 12): features/ring/ring_draft/oracle.py
            draft_block_forward(self, i, s)
            return self.snapshot(i, s)
        if s.op == "admit" and s.rid is not None and s.rid not in self.ever:
            self._take_slot(i, s.rid)
        rid_done = s.rid if s.op == "finish" else None
        toks = self.tokens.get(rid_done, []) if rid_done is not None else []
        super().run_op(i, s)
        if rid_done is not None:
            self.free_slots.add(self.slot.pop(rid_done))
            for f in toks:
                self.owner.pop(f, None)


def ring_invariants(case: Case, ring: dict | None, mapping: list[int],
                    free_full_pages: list[int], free_swa_pages: list[int],
                    live: dict[int, tuple[int, int]]) -> list[str]:
    """Violations of the ring rules in a ring engine's exposed state after one step.

    ``ring``: a ``StepObs``'s ring channel (:mod:`features.ring.channel`); ``live``:
    ``oracles.paths.expected_requests`` after the step. ``R4``: the mapping is all 0 (sentinel -1);
    ``slot``: each live request holds one slot in ``1..req_slots``, none shared, free and held
    partition the range; ``R5``: ``available == free full pages * P``, ``swa_available == free slots
    * ceil(R/P)*P``, the paged SWA counter within its size (sglang #38571) and never drawn from."""
    pc = case.pool
    P, S = pc.page_size, pc.req_slots
    out = []
    if mapping[-1:] != [-1] or any(v != 0 for v in mapping[:-1]):
        f = next((k for k, v in enumerate(mapping[:-1]) if v != 0), None)
        out.append(f"R4: the full->SWA mapping was written under a ring (first M[{f}] = "
                   f"{mapping[f] if f is not None else mapping[-1:]}); ring writes never read M")
    if ring is None:
        return out + ["ring: the engine exposes no ring state (StepObs.ring is None)"]
    slots = {int(k): v for k, v in ring.get("slots", {}).items()}
    free = list(ring.get("free_slots", []))
    if set(slots) != set(live):
        out.append(f"slot: requests holding slots {sorted(slots)} != live requests "
                   f"{sorted(live)}")
    zero = [r for r, s in slots.items() if s == 0]
    if zero:
        out.append(f"slot: request {zero[0]} holds request slot 0, the padding row (R1)")
    bad = [r for r, s in slots.items() if not 0 <= s <= S]
    if bad:
        out.append(f"slot: request {bad[0]} holds slot {slots[bad[0]]}, outside 1..{S}")
    if len(set(slots.values())) != len(slots):
        out.append(f"slot: two live requests share a slot ({sorted(slots.items())})")
    if sorted(set(free) | set(slots.values())) != list(range(1, S + 1)) or \
            set(free) & set(slots.values()) or len(set(free)) != len(free):
        out.append(f"slot: free slots {sorted(free)} and held slots "
                   f"{sorted(slots.values())} do not partition 1..{S}")
    if ring.get("available") != len(free_full_pages) * P:
        out.append(f"R5: available_size {ring.get('available')} != free full pages "
                   f"{len(free_full_pages)} * P {P}")
    want = len(free) * ring_cost(pc.swa_ring, P)
    if ring.get("swa_available") != want:
        out.append(f"R5: swa_available_size {ring.get('swa_available')} != free request slots "
                   f"{len(free)} * ceil(R/P)*P {ring_cost(pc.swa_ring, P)} = {want}")
    pa, ps = ring.get("swa_paged_available"), ring.get("swa_paged_size")
    if not isinstance(pa, int) or not isinstance(ps, int) or pa > ps:
        out.append(f"R5: the paged SWA allocator's available count {pa} exceeds its size {ps} "
                   "(a ring returned paged SWA pages it never took, sglang #38571)")
    if list(free_swa_pages) != list(range(1, pc.swa_pages + 1)):
        out.append(f"R5: the paged SWA allocator was drawn from under a ring (free pages "
                   f"{len(free_swa_pages)} of {pc.swa_pages})")
    return out


def make_shadow(case: Case, observed_alloc=None, observed_channels=None, window_of=None):
    """Hook ``oracle.shadow``: the ring shadow of a Case with a per-request SWA ring
    (``pool.swa_ring > 0``), None for any other Case. ``observed_channels``: per step the
    target's ``StepObs.channels``, whose ring channel is the observed ring state."""
    if not case.pool.swa_ring:
        return None
    return RingShadow(case, observed_alloc, observed_states(observed_channels), window_of)


class RingOracle(OraclePart):
    """The oracle part: a Case with a ring is answered by :class:`RingShadow`."""

    shadow = staticmethod(make_shadow)
