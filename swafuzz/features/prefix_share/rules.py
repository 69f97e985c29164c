"""Rules of radix-cache prefix hits (``Step.prefix_rid``, ``Step.prefix_len`` on ``admit``;
``features/prefix_share/SEMANTICS.md``): both are given, the hit leaves a new token, and it is on
another request."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    for i, s in enumerate(case.steps):
        if s.prefix_rid is None and s.prefix_len is None:
            continue
        path = f"steps[{i}]"
        if s.prefix_rid is None or s.prefix_len is None:
            missing, given = (("prefix_len", "prefix_rid") if s.prefix_len is None
                              else ("prefix_rid", "prefix_len"))
            raise CaseError(f"{path}.{missing}", f"is required with {given} (a prefix hit names "
                            "the request and the shared token count)")
        if s.prefix_len >= s.length:
            raise CaseError(f"{path}.prefix_len", f"must be < length = {s.length} (at least "
                            f"one new token; got {s.prefix_len})")
        if s.prefix_rid == s.rid:
            raise CaseError(f"{path}.prefix_rid", "must name another request than rid")
