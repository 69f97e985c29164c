"""The declaration of one Case field a feature owns (:class:`CaseField`).

A feature's folder holds its fields in ``fields.py`` (``FIELDS``, a tuple of :class:`CaseField`,
named by the record's ``fields``); :mod:`swafuzz.scenarios.schema` adds them to the dense base
fields of ``PoolConfig`` / ``GraphConfig`` / ``Step`` (component level) and assembles the server
level's ``ServerConfig`` / ``ModelShape`` / ``Request`` from them alone
(:mod:`swafuzz.server.case`); :func:`swafuzz.scenarios.validate.parse_declared` parses both
levels' fields from the declaration (type, default, range, allowed values). Rules that relate a
field to the rest of the Case stay in the feature's ``rules.py``. This module imports nothing of
ours, so a ``fields.py`` importing it drags nothing into the process that reads the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the field types a declaration may have (the dataclass annotation, as a string)
FIELD_TYPES = ("int", "int | None", "bool", "str", "str | None", "tuple[int, ...]",
               "tuple[int, ...] | None", "tuple[tuple[str, str], ...]")
#: where a field lives, per level: the component Case's pool, graph and steps; the server Case's
#: ``config`` (``ServerArgs`` fields and the deployment's environment), ``model`` and ``requests``
LEVELS = {"component": ("pool", "graph", "step"), "server": ("config", "model", "request")}
WHERE = LEVELS["component"] + LEVELS["server"]


@dataclass(frozen=True)
class CaseField:
    """One Case field: ``where`` it lives (one of :data:`WHERE`), its ``name``, ``type`` (one of
    :data:`FIELD_TYPES`), ``default`` and one-line ``doc``.

    Parse rules: integers (and a list's entries) in ``lo`` .. ``hi`` (``hi`` None: no upper
    bound), a power of two when ``pow2``; a ``str`` one of ``choices``; a list ``increasing``
    when its entries must strictly increase. At server level a ``... | None`` type takes JSON
    null (a list then is null or non-empty); ``tuple[tuple[str, str], ...]`` is an object of
    environment variables (names from ``choices``, values decimal strings in ``lo`` .. ``hi``),
    sorted pairs in the dataclass. ``always``: emitted in the JSON even at its default (the
    server fields every version-1 bundle carries; any other field only when set). ``span``: the
    error messages name the range as ``an int in lo..hi`` (the late-layer tail's fields) instead
    of ``in [lo, hi]``. ``ops``: for a step field, the ops that take it.
    ``after``: the field it follows in the dataclass (empty: after every field before it), which
    fixes the field order (and so ``repr`` and the JSON key order before sorting).
    """

    where: str
    name: str
    type: str
    default: Any
    doc: str
    lo: int = 0
    hi: int | None = None
    choices: tuple[str, ...] = ()
    increasing: bool = False
    span: bool = False
    ops: tuple[str, ...] = ()
    after: str = ""
    pow2: bool = False
    always: bool = False

    @property
    def ref(self) -> str:
        """``"where.name"``, as a record's ``case_fields`` lists it."""
        return f"{self.where}.{self.name}"

    @property
    def level(self) -> str:
        """``"component"`` or ``"server"``: the level whose Case holds the field."""
        return "server" if self.where in LEVELS["server"] else "component"

    def problem(self) -> str | None:
        """What is malformed in the declaration, or None."""
        if self.where not in WHERE:
            return f"{self.name}: where must be one of {', '.join(WHERE)} (got {self.where!r})"
        if self.type not in FIELD_TYPES:
            return f"{self.ref}: type must be one of {', '.join(FIELD_TYPES)} (got {self.type!r})"
        if not self.doc:
            return f"{self.ref}: the one-line doc must not be empty"
        if self.choices and not self.type.startswith(("str", "tuple[tuple")):
            return f"{self.ref}: choices need type str (or environment variables)"
        if self.ops and self.where != "step":
            return f"{self.ref}: ops are for step fields"
        if self.where == "step" and not self.ops:
            return f"{self.ref}: a step field names the ops that take it"
        return None
