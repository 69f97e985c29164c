"""Rules of DP attention (``Step.rank_tokens``, ``Step.dp_extend``; ``features/dp/SEMANTICS.md``):
a batch rewritten to EXTEND has ranks to pad to and requests of its own."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    for i, s in enumerate(case.steps):
        if s.dp_extend and not (s.rank_tokens and s.rids):
            raise CaseError(f"steps[{i}].dp_extend", "needs rank_tokens and at least one rid "
                            "(another rank extends: this rank's batch is rewritten to EXTEND)")
