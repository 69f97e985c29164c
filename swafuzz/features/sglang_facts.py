"""The shape of a feature's facts about the ``sglang`` target, declared in the feature's folder.

A feature that the target drives (or refuses) on some releases says so in its own folder: its
table rows and per-release answers as data, ``swafuzz/features/<name>/sglang_facts.json``
(``{"table": [[component, 0.5.12, 0.5.23, why], ...], "ranges": {prefix: [[first, last,
answer, why], ...]}}``), and the code (probe, refusal, describe, derive), where it has any, in
``sglang_facts.py``, one :class:`SGLangFacts` named ``FACTS`` that its record's hook
``sglang.facts`` points at. (This module sits beside the
registry, not in a feature folder: the registry's walk skips it, and a facts module importing
it imports no target code.) The core tables iterate the
registry (:func:`facts`) instead of listing features:

* :data:`swafuzz.targets.sglang.TABLE` (the real/modelled table) = the core's cross-feature rows
  (allocator, pool, store, resolver, ...) + every feature's :attr:`SGLangFacts.table`;
* :data:`swafuzz.targets.sglang.matrix.RANGES` (the per-release answers) likewise;
* :mod:`swafuzz.targets.sglang.features` (what the installed release has, by inspection) runs
  every feature's :attr:`SGLangFacts.probe`, asks every :attr:`SGLangFacts.refusal` for a Case
  and lists every :attr:`SGLangFacts.describe`.

This module and the facts modules import no SGLang at module level: reading the tables needs
none. A probe is called with the inspection module (its helpers ``first_module``,
``source_has``, the release's ``backend_mod`` / ``SWATokenToKVPoolAllocator``, and what earlier
features' probes found, in registry order) and returns the names it found (module attributes of
the inspection module from then on, for the seams that read them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable

from swafuzz.features import all_features, load

#: ``(component, 0.5.12 answer, 0.5.23 answer, why)``: one row of the real/modelled table
Row = tuple[str, str, str, str]
#: ``(first, last, answer, why)``: the answer of releases ``first .. last`` (inclusive) where it
#: differs from the 0.5.23 column (0.5.12 keeps its own column)
Range = tuple[str, str, str, str]
ANSWERS = ("real", "modelled", "absent", "refused")


@dataclass(frozen=True)
class SGLangFacts:
    """One feature's facts about the ``sglang`` target.

    ``table``: its rows of the real/modelled table; ``ranges``: component prefix (as
    ``str.startswith``, more specific prefixes first) -> its per-release answers;
    ``probe(found) -> {name: value}``: what the installed release has for it (by inspection);
    ``refusal(case, found) -> str | None``: what a Case that uses it needs and the release lacks
    (``found``: the inspection module after every probe); ``describe(found) -> [(what, found)]``:
    its rows of the inspection report; ``derive``: component prefix -> ``(found) -> (answer,
    why)`` or None, the answer of a release whose probe is recorded (``found``: its
    inspection rows, :mod:`swafuzz.targets.sglang.detected`), None where it is the 0.5.23
    column's: the per-release table is generated from detection where a row says how."""

    table: tuple[Row, ...] = ()
    ranges: dict[str, tuple[Range, ...]] = field(default_factory=dict)
    probe: Callable[[ModuleType], dict[str, Any]] | None = None
    refusal: Callable[[Any, ModuleType], str | None] | None = None
    describe: Callable[[ModuleType], list[tuple[str, str]]] | None = None
    derive: dict[str, Callable[[dict[str, str]], tuple[str, str] | None]] = field(
        default_factory=dict)

    def validate(self, where: str) -> None:
        """Raise ValueError naming ``where`` and the field when a row or range is malformed."""
        for row in self.table:
            if len(row) != 4 or row[1] not in ANSWERS or row[2] not in ANSWERS:
                raise ValueError(f"{where}: table row {row[:1]!r}: (component, answer, answer, "
                                 f"why) expected, answers one of {', '.join(ANSWERS)}")
        for key, ranges in self.ranges.items():
            for r in ranges:
                if len(r) != 4 or r[2] not in ANSWERS:
                    raise ValueError(f"{where}: ranges[{key!r}]: (first, last, answer, why) "
                                     f"expected, answer one of {', '.join(ANSWERS)}")


POINT = "sglang.facts"


def facts() -> list[SGLangFacts]:
    """Every feature's facts, in registry order: the data of ``features/<name>/sglang_facts.json``
    (``table``, ``ranges``) joined with the code its record's hook ``sglang.facts`` points at
    (an :class:`SGLangFacts` holding ``probe`` / ``refusal`` / ``describe`` / ``derive``), for the
    features with either."""
    out = []
    for f in all_features():
        data = _data(os.path.dirname(f.semantics)[len("swafuzz/features/"):])
        code = load(f.hooks[POINT]) if POINT in f.hooks else None
        if data is None and code is None:
            continue
        if code is not None and not isinstance(code, SGLangFacts):
            raise TypeError(f"feature {f.name!r}: hooks[{POINT}] is not an SGLangFacts")
        got = replace(code or SGLangFacts(), **(data or {}))
        got.validate(f"feature {f.name!r}: sglang facts")
        out.append(got)
    return out


def _data(name: str) -> dict | None:
    """``features/<name>/sglang_facts.json`` as SGLangFacts fields (rows as tuples), or None
    (``name``: the feature's folder under ``features/``, ``request_window/late_tail`` for a
    family's sub-feature)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name, "sglang_facts.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    return {"table": tuple(tuple(r) for r in raw.get("table", ())),
            "ranges": {k: tuple(tuple(r) for r in v) for k, v in raw.get("ranges", {}).items()}}
