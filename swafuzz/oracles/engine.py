"""Engine oracle: what running a Case must have done, computed in plain Python.

Independent of the code under test: this module never imports ``targets/``, ``kernels/`` or
torch. It re-implements the step semantics written in ``features/*/SEMANTICS.md`` (the
contract) over Python ints, lists, sets and bytearrays: the shadow allocator and mapping ``M``
(:mod:`oracles.allocator`), the expected forwards, shadow SWA pool bytes and per-step states
(:mod:`oracles.shadow`, types in :mod:`oracles.expectation`).

:func:`expect` is the entry point: it picks the shadow of the Case's path (the paged
:class:`oracles.shadow.Shadow` or a feature's, e.g. the ring's ``RingShadow``, each with the
window / tail path's shadow where the Case uses one) and runs it; this module re-exports the
expectation types and the verdicts (:mod:`oracles.errors`). It is also the reference answer to
"is this Case valid": it raises :class:`CaseInfeasible` for a step the contract cannot run
(unknown or repeated request ids, not enough free pages, no graph bucket, accept out of range,
...).
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.oracles.errors import AllocationRejected, CaseInfeasible, OracleError
from swafuzz.oracles.expectation import Expectation, ForwardExp, StepExp
from swafuzz.oracles.shadow import Shadow
from swafuzz.oracles.translation import translate as expected_translation
from swafuzz.scenarios.case import Case

__all__ = ["AllocationRejected", "CaseInfeasible", "Expectation", "ForwardExp", "OracleError",
           "StepExp", "expect", "expected_translation", "window_shadow"]


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

    A feature's shadow (slot ``OraclePart.shadow``: the per-request ring's ``RingShadow`` for
    ``pool.swa_ring > 0``, addendum §2.1) answers a Case of its path; ``observed_channels`` (per
    step, the target's ``StepObs.channels``) then supplies an observed-allocation target's
    request-slot choices.
    """
    sh = features.first("oracle", "shadow", case, observed_alloc, observed_channels,
                        window_shadow)
    if sh is None:
        sh = Shadow(case, observed_alloc, window_shadow)
    return sh.run(pools_every_step)
