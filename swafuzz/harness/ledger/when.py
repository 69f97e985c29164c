"""The ``when`` predicate of a known-failure ledger entry (:mod:`swafuzz.harness.ledger.entries`): its
validation (:func:`parse_when`) and its evaluation on a parsed Case (:meth:`When.holds`).

A ``when`` is an object with any of these keys, all of which must hold

* ``"kind"``: a constraint on the Case's scenario kind;
* ``"release"``: a constraint on the target version (``--release``, else the finding's recorded
  ``versions[target]``; unknown fails it), compared numerically (``{"min": "0.5.20"}``);
* ``"pool"`` / ``"graph"``: ``{field: constraint}`` over the fields of ``PoolConfig`` /
  ``GraphConfig``, defaults included (``{"page_size": 1, "swa_ring": {"min": 1}}``);
* ``"steps"``: step patterns ``{field: constraint}`` over ``Step`` fields, each matched by at
  least one step (``[{"op": "draft_extend", "exec": "graph"}]``);
* ``"forwards"``: forward patterns over the forwards the oracle expects for the Case as the
  finding's executors ran them (:func:`case_forwards`), each matched by some forward. A step
  says what was asked, a forward how it ran (the eager executor runs graph steps eagerly):
  ``[{"exec": "eager", "padded": true, "n_real": {"min": 1}}]`` is DP padding run eagerly.

A constraint is a value (equality), a list of allowed values, ``{"min": A, "max": B}``
(inclusive, integer and version fields) or ``{"present": true|false}`` (list and optional
fields). Everything is checked when the ledger is loaded: a :class:`LedgerError` names the JSON
path (``entries[2].when.steps[0].exec``) and what is allowed.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

from swafuzz.oracles.engine import CaseInfeasible, expect
from swafuzz.scenarios import case as C


class LedgerError(ValueError):
    """A malformed ledger; the message names the entry and field."""


_WHEN_KEYS = ("kind", "release", "pool", "graph", "steps", "forwards")
# the oracle's expected forwards (oracles.engine.ForwardExp) as a ``forwards`` pattern sees them
FORWARD_MODES = ("EXTEND", "DECODE", "TARGET_VERIFY", "DRAFT_EXTEND_V2", "IDLE")
_FORWARD_FIELDS = {"executor": "str", "pool": "str", "mode": "str", "exec": "str",
                   "n_real": "int", "rows": "int", "padded": "bool"}
_FORMS = ("a value", "a list of allowed values", '{"min": A, "max": B}', '{"present": true|false}')
_VERSION = re.compile(r"^\d+(\.\d+)*(\.post\d+)?$")
_RELEASE_IN = re.compile(r"(?:^|\s)(\d+(?:\.\d+)*(?:\.post\d+)?)(?=$|\s)")


def release_of(v: str) -> str | None:
    """The release a recorded target version names: ``"0.5.17"``, ``"0.5.13.post1"``, the first
    version token of a label (``"sglang 0.5.17 (resolver family)"`` -> ``"0.5.17"``); None when
    it holds none."""
    m = _RELEASE_IN.search(v.strip()) if isinstance(v, str) else None
    return m.group(1) if m else None


def _case_fields():
    """{section: {field: type string}} of the Case dataclasses (pool, graph, step)."""
    return {sec: {f.name: str(f.type) for f in dataclasses.fields(cls)}
            for sec, cls in (("pool", C.PoolConfig), ("graph", C.GraphConfig), ("steps", C.Step))}


def _allowed_strings(sec: str, name: str) -> tuple[str, ...] | None:
    return {("steps", "op"): C.OPS, ("steps", "exec"): C.EXECS,
            ("pool", "row_dtype"): C.ROW_DTYPES, ("forwards", "exec"): C.EXECS,
            ("forwards", "pool"): ("target", "draft"),
            ("forwards", "mode"): FORWARD_MODES}.get((sec, name))


def case_forwards(case, executors: tuple[str, ...] = ()) -> tuple[dict, ...] | None:
    """The forwards of ``case`` as the finding's executors ran them, from the oracle's expected
    forwards (exact allocation policy; the fields read here do not depend on which pages are
    chosen). Per executor (``executors``: the finding's, e.g. ``("eager", "tape")``; empty =
    unknown, the forwards as the Case asks) and forward: ``executor``, ``pool``, ``mode``,
    ``exec`` (``"eager"`` for every forward under the eager executor, which runs graph steps
    eagerly; else the Case's), ``n_real`` (real rows), ``rows`` (rows written: the bucket's
    under a graph, else the eager count, DP padding included), ``padded`` (``rows > n_real``).
    None when the oracle refuses the Case (a forwards pattern then never holds)."""
    try:
        hash(case)
    except TypeError:  # not hashable: no cache
        return _case_forwards.__wrapped__(case, tuple(executors))
    return _case_forwards(case, tuple(executors))


@functools.lru_cache(maxsize=256)
def _case_forwards(case, executors: tuple[str, ...]) -> tuple[dict, ...] | None:
    try:
        exp = expect(case, pools_every_step=False)
    except (CaseInfeasible, C.CaseError):
        return None
    out = []
    for ex in executors or ("",):
        for e in exp.forwards:
            run = "eager" if ex == "eager" else e.exec
            rows = e.rows_graph if run == "graph" and e.rows_graph is not None else e.rows_eager
            out.append({"executor": ex, "pool": e.pool, "mode": e.mode, "exec": run,
                        "n_real": e.n_real, "rows": rows, "padded": rows > e.n_real})
    return tuple(out)


def _version_key(v: str) -> tuple[int, ...]:
    """Numeric components; a post-release compares as its release (``0.5.22.post1`` lies in
    ``{"max": "0.5.22"}``: the same code line)."""
    return tuple(int(x) for x in v.split(".post")[0].split("."))


def _check_constraint(c, typ: str, at: str, allowed: tuple[str, ...] | None = None):
    """Validate one constraint against a field of type ``typ`` (its annotation as a string, or
    ``"version"``); return it normalised (versions as int tuples inside ranges)."""
    is_tuple = typ.startswith("tuple")
    optional = "None" in typ
    base = "bool" if typ.startswith("bool") else "str" if typ.startswith("str") else \
        "version" if typ == "version" else "int"

    def scalar_ok(x) -> bool:
        if x is None:
            return optional
        if base == "bool":
            return isinstance(x, bool)
        if base in ("str", "version"):
            return isinstance(x, str) and (base == "str" or bool(_VERSION.match(x))) and (
                allowed is None or x in allowed)
        return isinstance(x, int) and not isinstance(x, bool)

    want = (f"one of {list(allowed)}" if allowed else
            {"bool": "true/false", "str": "a string", "version": "a version like \"0.5.23\"",
             "int": "an integer"}[base] + (" or null" if optional else ""))
    if isinstance(c, dict):
        keys = set(c)
        if keys == {"present"}:
            if not (is_tuple or optional):
                raise LedgerError(f"{at}: {{\"present\": ...}} is for list or optional fields; "
                                  f"this field takes {want} ({', '.join(_FORMS[:3])})")
            if not isinstance(c["present"], bool):
                raise LedgerError(f"{at}.present: must be true or false")
            return c
        if keys and keys <= {"min", "max"} and base in ("int", "version") and not is_tuple:
            for k in sorted(keys):
                x = c[k]
                if x is None or not scalar_ok(x):
                    raise LedgerError(f"{at}.{k}: must be {want.replace(' or null', '')}")
            if base == "version":
                return {k: _version_key(v) for k, v in c.items()}
            if "min" in c and "max" in c and c["min"] > c["max"]:
                raise LedgerError(f"{at}: min {c['min']} > max {c['max']}: matches nothing")
            return c
        raise LedgerError(f"{at}: unknown constraint {sorted(keys)}; allowed forms: "
                          + (', '.join(_FORMS[1:2] + _FORMS[3:]) if is_tuple else
                             ', '.join(_FORMS[:3]) + (f", {_FORMS[3]}" if optional else ""))
                          + (" (min/max only on integer or version fields)" if keys <= {
                              "min", "max"} and keys else ""))
    if is_tuple:
        raise LedgerError(f"{at}: a list field takes {_FORMS[3]} (got {c!r})")
    if isinstance(c, list):
        if not c:
            raise LedgerError(f"{at}: an empty list of allowed values matches nothing")
        for j, x in enumerate(c):
            if not scalar_ok(x):
                raise LedgerError(f"{at}[{j}]: must be {want} (got {x!r})")
        return list(c)
    if not scalar_ok(c):
        forms = _FORMS[1:3] if base in ("int", "version") else _FORMS[1:2]
        raise LedgerError(f"{at}: must be {want} (got {c!r}), or {' or '.join(forms)} of such")
    return c


def check_constraint(c, typ: str, at: str):
    """Validate one constraint on a field of type ``typ`` (``"int"``, ``"str"``, ...) outside a
    ``when`` (a server answer's ``model``); return it normalised (:func:`holds_constraint`)."""
    return _check_constraint(c, typ, at)


def holds_constraint(c, value) -> bool:
    """Does ``value`` satisfy the constraint :func:`check_constraint` returned?"""
    return _holds(c, value)


def _holds(c, value, version: bool = False) -> bool:
    """Does ``value`` satisfy the (validated) constraint ``c``?"""
    if isinstance(c, dict):
        if "present" in c:
            return (value is not None and value != ()) == c["present"]
        if value is None:
            return False
        v = _version_key(value) if version else value
        return ("min" not in c or v >= c["min"]) and ("max" not in c or v <= c["max"])
    if isinstance(c, list):
        return value in c
    return value == c


@dataclass(frozen=True)
class When:
    """A parsed ``when`` predicate (see the module docstring)."""

    kind: object = None
    release: object = None
    pool: tuple[tuple[str, object], ...] = ()
    graph: tuple[tuple[str, object], ...] = ()
    steps: tuple[tuple[tuple[str, object], ...], ...] = ()
    forwards: tuple[tuple[tuple[str, object], ...], ...] = ()

    def holds(self, case, release: str | None, executors: tuple[str, ...] = ()) -> bool:
        """Does the Case (a parsed :class:`~swafuzz.scenarios.case.Case`) on target version
        ``release`` (None: unknown, fails any release constraint), run by ``executors`` (for
        ``forwards``; empty: unknown), satisfy the predicate?"""
        if self.kind is not None and not _holds(self.kind, case.kind):
            return False
        release = release_of(release) if release is not None else None
        if self.release is not None and (release is None or not _VERSION.match(release)
                                         or not _holds(self.release, release, version=True)):
            return False
        for sec, obj in (("pool", case.pool), ("graph", case.graph)):
            if not all(_holds(c, getattr(obj, n)) for n, c in getattr(self, sec)):
                return False
        if not all(any(all(_holds(c, getattr(s, n)) for n, c in pat) for s in case.steps)
                   for pat in self.steps):
            return False
        if not self.forwards:
            return True
        fw = case_forwards(case, tuple(executors))
        return fw is not None and all(any(all(_holds(c, f[n]) for n, c in pat) for f in fw)
                                      for pat in self.forwards)


def parse_when(obj, at: str) -> When:
    """Validate a ``when`` object; :class:`LedgerError` names the JSON path and what is allowed."""
    if not isinstance(obj, dict) or not obj:
        raise LedgerError(f"{at}: must be a non-empty object with some of the keys "
                          f"{list(_WHEN_KEYS)}")
    extra = set(obj) - set(_WHEN_KEYS)
    if extra:
        raise LedgerError(f"{at}: unknown keys {sorted(extra)}; allowed: {list(_WHEN_KEYS)}")
    fields = {**_case_fields(), "forwards": _FORWARD_FIELDS}
    kw = {}
    if "kind" in obj:
        kw["kind"] = _check_constraint(obj["kind"], "str", f"{at}.kind")
    if "release" in obj:
        kw["release"] = _check_constraint(obj["release"], "version", f"{at}.release")

    def section(d, sec: str, where: str):
        if not isinstance(d, dict) or not d:
            raise LedgerError(f"{where}: must be a non-empty object of field -> constraint; "
                              f"fields: {sorted(fields[sec])}")
        out = []
        for name, c in sorted(d.items()):
            if name not in fields[sec]:
                raise LedgerError(f"{where}.{name}: unknown field; allowed: {sorted(fields[sec])}")
            out.append((name, _check_constraint(c, fields[sec][name], f"{where}.{name}",
                                                _allowed_strings(sec, name))))
        return tuple(out)

    for sec in ("pool", "graph"):
        if sec in obj:
            kw[sec] = section(obj[sec], sec, f"{at}.{sec}")
    for sec, what in (("steps", "step"), ("forwards", "forward")):
        if sec not in obj:
            continue
        st = obj[sec]
        if not isinstance(st, list) or not st:
            raise LedgerError(f"{at}.{sec}: must be a non-empty list of {what} patterns (objects "
                              f"of {what} field -> constraint; each is matched by some {what})")
        kw[sec] = tuple(section(p, sec, f"{at}.{sec}[{j}]") for j, p in enumerate(st))
    return When(**kw)
