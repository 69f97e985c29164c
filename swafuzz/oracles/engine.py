"""Engine oracle: what running a Case must have done, computed in plain Python.

Independent of the code under test: this module never imports ``targets/``, ``kernels/`` or
torch. It re-implements the step semantics written in ``features/*/SEMANTICS.md``
(the contract) over Python ints, lists, sets and bytearrays:

* a shadow allocator (:mod:`oracles.allocator`: free page sets handing out the lowest page
  first, per-request token lists and SWA eviction frontiers) and the full->SWA mapping ``M`` as
  a list of ints of length ``full_pages*P + P + 1`` with ``M[-1] == -1``;
* the expected forwards (:class:`ForwardExp`, :mod:`oracles.shadow`): pool, mode, real rows,
  their full locations and SWA write targets ``M[loc]`` (after the step's allocation), the row
  counts on the eager path and under a captured graph bucket;
* the shadow SWA pools, rows only in slot order (page pads are canaries the contract keeps out
  of the pool bytes; every byte starts at ``POISON_BYTE``; each real row's payload from
  :func:`scenarios.payload.rows_bytes` is written at its target slot unless that slot is in the
  dummy page 0, whose bytes are not meaningful; layout ``"dsv4"``: the row's quantized 584-byte
  token from :mod:`features.dsv4_layout.oracle`);
* the state after every step (:class:`StepExp`).

This module is the entry point: :func:`expect` picks the shadow of the Case's path (the paged
:class:`oracles.shadow.Shadow`, the per-request ring :class:`features.ring.oracle.RingShadow`, each with
the window / tail path's shadow where the Case uses one) and runs it; it re-exports the
expectation types (:mod:`oracles.expectation`) and the verdicts (:mod:`oracles.errors`).

:func:`expect` is also the reference answer to "is this Case valid": it raises
:class:`CaseInfeasible` for a step the contract cannot run (unknown or repeated request ids, not
enough free pages, no graph bucket, accept out of range, ...).
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.oracles.errors import AllocationRejected, CaseInfeasible, OracleError
from swafuzz.oracles.expectation import Expectation, ForwardExp, StepExp
from swafuzz.oracles.shadow import Shadow
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import Case

__all__ = [
    "AllocationRejected",
    "CaseInfeasible",
    "Expectation",
    "ForwardExp",
    "OracleError",
    "StepExp",
    "expect",
    "expected_translation",
    "window_shadow",
]


def window_shadow(case: Case):
    """The Case's request window / late-layer tail shadow (slot ``OraclePart.step_path_shadow``:
    the tail-graphs feature's ``WindowShadow`` with tail graphs), None when the Case uses neither."""
    return features.first("oracle", "step_path_shadow", case)


def expect(case: Case, *, pools_every_step: bool = True,
           observed_alloc: list[list[list[int]]] | None = None,
           observed_channels: list[dict] | None = None) -> Expectation:
    """Run ``case`` on the shadow engine. Raises :class:`CaseInfeasible` for an invalid step.

    ``observed_alloc`` (observed-allocation mode, for targets whose allocator picks pages
    itself): ``observed_alloc[i]`` lists the ``[full slot, SWA slot]`` of every token step ``i``
    allocated, in the contract's order. Each choice is validated (a fresh page was free, is not
    page 0, no live slot maps into it; a continuing token sits at the next offset of its
    request's last page on both sides) and then followed; the expected writes, mapping, free
    lists and pool bytes follow from the validated choices. An invalid choice raises
    :class:`AllocationRejected`. Steps past the end of the list use the exact policy. Nothing
    else is taken from the target.

    ``pools_every_step=False`` keeps the pool bytes only in the last :class:`StepExp` (earlier
    ones get ``pools == {}``): each snapshot is ``(layers + draft_layers) * swa_slots *
    row_bytes`` bytes, which is large for big pools.

    A Case with a per-request SWA ring (``pool.swa_ring > 0``) is answered by
    :class:`features.ring.oracle.RingShadow` (addendum §2.1); ``observed_channels`` (per step, the
    target's ``StepObs.channels``: the ring's exposed state among them) then supplies the
    request-slot choices of an observed-allocation target.
    """
    sh = features.first("oracle", "shadow", case, observed_alloc, observed_channels,
                        window_shadow)  # e.g. the ring's RingShadow (addendum §2.1)
    if sh is None:
        sh = Shadow(case, observed_alloc, window_shadow)
    return sh.run(pools_every_step)
