"""Engine oracle: what running a Case must have done, in plain Python (never ``targets/``,
``kernels/`` or torch), re-implementing ``features/*/SEMANTICS.md`` over ints, lists, sets and
bytearrays: the shadow allocator and ``M`` (:mod:`oracles.allocator`), the expected forwards, pool
bytes and step states (:mod:`oracles.shadow`, types in :mod:`oracles.expectation`).

:func:`expect` runs the shadow of the Case's path (the paged Shadow or a feature's, e.g.
``RingShadow``); it is also the reference for "is this Case valid", raising
:class:`CaseInfeasible` for a step the contract cannot run. Re-exports the expectation types and
verdicts (:mod:`oracles.errors`).
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

    ``observed_alloc[i]`` (targets whose allocator picks pages): the ``[full slot, SWA slot]`` of
    each token step ``i`` allocated, in contract order. Each choice is validated (fresh page free,
    not page 0, unmapped; a continuing token at the next offset of its request's last page on both
    sides; else :class:`AllocationRejected`) and followed; later steps use the exact policy.
    ``observed_channels`` (per step ``StepObs.channels``) supplies a feature shadow's choices (the
    ring's request slots). ``pools_every_step=False`` keeps pool bytes only in the last
    :class:`StepExp` (each snapshot is ``(layers + draft_layers) * swa_slots * row_bytes``)."""
    sh = features.first("oracle", "shadow", case, observed_alloc, observed_channels,
                        window_shadow)
    if sh is None:
        sh = Shadow(case, observed_alloc, window_shadow)
    return sh.run(pools_every_step)
