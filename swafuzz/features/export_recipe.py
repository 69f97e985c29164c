"""What a feature hands ``swafuzz export`` for a finding on its path (hook ``export.sglang_test``):
a :class:`Recipe`, plain data (imports nothing of ours). ``swafuzz.export`` writes it out for an
SGLang maintainer: the functions on the failing path, expected vs observed in SGLang's terms
(:class:`Row`), a standalone test file (imports SGLang only) and, where one is known, the fix as
a one-expression source substitution (:class:`Fix`) that the harness's check applies to show the
test passes with it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Row:
    """One line of expected vs observed: where (rank, request id, token position, query row of
    the forward's batch, request slot ``req_pool_idx``; None: not applicable) and the two sides
    in the release's words."""

    rank: int | None
    request: int | None
    position: int | None
    row: int | None
    slot: int | None
    expected: str
    observed: str


@dataclass(frozen=True)
class Fix:
    """The fix as a substitution in one function's source: ``old`` (occurring once in
    ``module:qualname``'s source) becomes ``new``; ``why`` says what it changes."""

    module: str
    qualname: str
    old: str
    new: str
    why: str


@dataclass(frozen=True)
class Recipe:
    """A finding as an SGLang maintainer takes it (module docstring). ``functions``:
    ``module:qualname`` on the failing path in call order; ``culprit``: the one that is wrong;
    ``test_source``: the test file's text (``test_name``); ``fixed_in``: a release whose own
    code has the fix (its test passes there), else None; ``fix``: the fix the check applies."""

    title: str
    where: str
    functions: tuple[str, ...]
    culprit: str
    rows: tuple[Row, ...]
    test_name: str
    test_source: str
    fix: Fix | None = None
    fixed_in: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("test_source")
        return d


def literal(value) -> str:
    """A Python literal of plain data (lists, tuples, ints, bools, str), for generated tests."""
    return repr(value)
