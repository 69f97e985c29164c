"""A Case checked against every rule: the common rules (types, ranges, the fields each op takes,
the resource limits: :mod:`scenarios.validate`, run by ``Case.from_json``), then each feature's
``validators``, found through the registry.

Every feature's validators run on every Case, feature by feature in registry order (each
validator decides itself whether the Case uses its fields or ops): a rule can hold for a Case
that sets none of the feature's fields (a ``draft_block`` step without a ring is ``ring_draft``'s
to refuse), and a hand-written Case has kind ``"custom"``, so neither the kind nor
:func:`swafuzz.features.features_using` could choose the validators. Every error is a
:class:`scenarios.case.CaseError` naming the dotted field and what is allowed.

This is how the harness reads every Case it did not build itself (bundles, ledger repros, the
case worker's input, a run log replay):

    from swafuzz.features.validation import load_case, loads_case
    case = load_case(bundle["case"])      # CaseError naming the field, else the Case
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from swafuzz.features import all_features, kind_names, load
from swafuzz.scenarios.case import Case, CaseError

__all__ = ["validators", "validate_case", "load_case", "loads_case"]


@lru_cache(maxsize=None)
def validators() -> tuple[tuple[str, Callable[[Case], None]], ...]:
    """``(feature name, validator)`` of every record's ``validators``, in registry order."""
    return tuple((f.name, load(ref)) for f in all_features() for ref in f.validators)


#: the kind of a Case written by hand (``Case``'s default): it names no scenario kind
CUSTOM_KIND = "custom"


def validate_case(case: Case) -> Case:
    """Check ``case.kind`` (a registered scenario kind, or ``custom``) and run every feature's
    validators on ``case``; return it, or raise the first CaseError."""
    if case.kind != CUSTOM_KIND and case.kind not in kind_names():
        raise CaseError("case.kind", f"{case.kind!r} is not a scenario kind; allowed: "
                        f"{CUSTOM_KIND} (a hand-written Case), {', '.join(kind_names())}")
    for _, check in validators():
        check(case)
    return case


def load_case(obj: Any) -> Case:
    """``Case.from_json(obj)`` (the common rules), then every feature's rules."""
    return validate_case(Case.from_json(obj))


def loads_case(text: str) -> Case:
    """``Case.loads(text)`` (a JSON text), then every feature's rules."""
    return validate_case(Case.loads(text))
