"""The ring's part of the ``invariants`` check (addendum §2.1, hook ``check.invariants``; no check
of its own): on a ring Case the paged rules give way to
:func:`features.ring.oracle.ring_invariants`, judged from the engine's exposure and the Case.
"""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.features.parts import CheckPart
from swafuzz.features.ring.channel import state
from swafuzz.features.ring.oracle import ring_invariants


def invariant_failures(case, so, where: str, live) -> list[Failure] | None:
    """Hook ``check.invariants``: the ring rules over one step's exposure (mapping, free lists,
    the step's ring channel, the request table) and the Case's live requests ``live``; None for a Case
    without a ring (the paged rules then). Proven by ``ring_accounting_drift`` (sglang #38571)
    and ``ring_slot_zero`` (R1)."""
    if not case.pool.swa_ring:
        return None
    v = ring_invariants(case, state(so), so.mapping, so.free_full_pages, so.free_swa_pages,
                        live)
    if so.requests is not None:
        got = {r: (len(t), ev) for r, (t, ev) in so.requests.items()}
        if got != live:
            v.insert(0, f"request: request table {got} differs from the Case {live}")
    if not v:
        return []
    cls = v[0].split(":")[0]
    return [Failure("invariants", f"{where}: {len(v)} ring violations; first: {v[0]}",
                    "ring-" + cls.lower(), so.step)]


def slot_owner(case, row: int) -> str | None:
    """Hook ``check.slot_owner``: where ring row ``row`` sits: skipped (-1), slot 0 (the padding
    slot), a request slot and offset, or past the ring rows; None for a Case without a ring."""
    if not case.pool.swa_ring:
        return None
    R, S = case.pool.swa_ring, case.pool.req_slots
    if row == -1:
        return "a skipped row (-1)"
    if row < 0 or row >= (S + 1) * R:
        return "outside the ring rows"
    slot, off = divmod(row, R)
    return "ring row of the padding slot 0" if slot == 0 else \
        f"ring row of request slot {slot}, offset {off}"


def skipped_loc(case, loc: int) -> bool:
    """Hook ``check.skipped_loc``: on a ring, ``-1`` is a row outside the window that the store
    skips (addendum §2.1, R1), not a negative write location."""
    return bool(case.pool.swa_ring) and loc == -1


class RingChecks(CheckPart):
    """The checks' part: the ring's invariants, slot owners and skipped rows."""

    invariants = staticmethod(invariant_failures)
    slot_owner = staticmethod(slot_owner)
    skipped_loc = staticmethod(skipped_loc)
