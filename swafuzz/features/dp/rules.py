"""Rules of DP attention (``Step.rank_tokens``, ``Step.dp_extend``; ``features/dp/SEMANTICS.md``):
a batch rewritten to EXTEND has ranks to pad to and requests of its own."""

from __future__ import annotations

from swafuzz.features.parts import ScenarioPart
from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    for i, s in enumerate(case.steps):
        if s.dp_extend and not (s.rank_tokens and s.rids):
            raise CaseError(f"steps[{i}].dp_extend", "needs rank_tokens and at least one rid "
                            "(another rank extends: this rank's batch is rewritten to EXTEND)")


def step_shape(obj: dict, path: str, kw: dict, get) -> None:
    """How many other ranks a parsed step's ``rank_tokens`` lists (hook
    ``scenario.step_shape``): ``dp_decode`` 1..7 (and some rank with tokens), an ``extend`` that
    lists them (a DP-padded EXTEND: MAX_LEN, window only, whose entries are the peers' tail rows
    under ``tail_exec: "bucket"``) 1..7, any other step at most 7."""
    op, ranks = kw["op"], get("rank_tokens")
    if op == "dp_decode" or (op == "extend" and "rank_tokens" in obj):
        if not 1 <= len(ranks) <= 7:
            raise CaseError(f"{path}.rank_tokens", "must list 1..7 other ranks' token counts")
    if op == "dp_decode" and not kw["rids"] and max(ranks) == 0:
        raise CaseError(f"{path}.rank_tokens", "some rank must have tokens")
    if len(ranks) > 7:
        raise CaseError(f"{path}.rank_tokens", "must list 0..7 other ranks' token counts")


class DPScenario(ScenarioPart):
    """The input language's part: a step's rank shape rules."""

    step_shape = staticmethod(step_shape)
