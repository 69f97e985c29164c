"""A ledger entry's answer at server level: which server arguments and requests reach the
finding on its releases, or the guard that blocks it.

An entry's optional ``server`` field (:mod:`swafuzz.harness.ledger.entries`)::

    "server": {"status": "unreachable",                     # or "probable", "reachable"
               "server_args": {"tp_size": 4, ...},           # ServerArgs field names
               "env": {"SGLANG_...": "8192"},                # optional: deployment env
               "stand_in": {"dspark_block_size": 4},         # optional: model config keys
               "model": {"window_page_remainder": {"min": 1}},  # optional: Case model facts
               "requests": "an extend of 1 token on ...",    # the request pattern
               "guard": "pkg.module.function: the rule",     # what blocks it (unreachable)
               "test": "tests/targets/test_x.py::test_y",    # the test that checks the answer
               "bundle": null,                               # a server-level bundle (reachable)
               "signatures": ["server:window_ring"],         # reachable: what its Cases fail with
               "note": "..."}                                # optional

* ``unreachable``: ``guard`` names the release's check or shape that blocks every server path;
  ``test`` checks it holds on the entry's releases (with ``server_args`` when given).
* ``probable``: ``test`` checks the release accepts ``server_args``; ``requests`` is the pattern
  that reaches the path; ``bundle`` null.
* ``reachable``: as probable, and ``bundle`` reproduces it; a server-level campaign knows a
  failing Case as this entry's (:func:`swafuzz.harness.ledger.known.server_known`) when target
  and release apply, a ``signatures`` pattern (``server:<check>``) matches, the Case's config
  holds every ``server_args`` value and its model every ``model`` constraint.

``model`` narrows a reachable answer by what a server reads from its checkpoint rather than its
arguments (:func:`model_facts`): ``{field: constraint}`` over the server Case's ``model`` fields
(``sliding_window``, ``swa_eviction_interval``, ...) and ``window_page_remainder`` (the window
modulo the page size when the window is longer than a page, else 0: a window that is not a whole
number of pages), constraints as in a ``when`` (:mod:`swafuzz.harness.ledger.when`): a value, a
list of allowed values or ``{"min": A, "max": B}``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

from swafuzz.harness.ledger.when import LedgerError, check_constraint, holds_constraint
from swafuzz.server.case import ModelShape

STATUSES = ("unreachable", "probable", "reachable")
_KEYS = ("status", "server_args", "env", "stand_in", "model", "requests", "guard", "test",
         "bundle", "signatures", "note")
_TEST = re.compile(r"^tests/[\w./-]+\.py::[A-Za-z_]\w*$")
_SCALARS = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class ServerAnswer:
    status: str
    test: str
    server_args: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    stand_in: dict[str, object] = field(default_factory=dict)
    requests: str = ""
    guard: str = ""
    bundle: str | None = None
    note: str = ""
    signatures: tuple[str, ...] = ()
    model: tuple[tuple[str, object], ...] = ()  # (field, validated constraint): model_facts


def _model_fields() -> dict[str, str]:
    """The ``model`` constraint fields and their types: the server Case's model fields and the
    derived ``window_page_remainder``."""
    out = {f.name: f.type if isinstance(f.type, str) else f.type.__name__
           for f in dataclasses.fields(ModelShape)}
    return {**out, "window_page_remainder": "int"}


def model_facts(case) -> dict[str, object]:
    """What a server Case's model holds, as an answer's ``model`` reads it (module docstring)."""
    m, page = case.model, case.config.page_size
    facts = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
    w = m.sliding_window
    facts["window_page_remainder"] = w % page if w > page else 0
    return facts


def holds_model(answer, facts: dict | None) -> bool:
    """Does a Case's :func:`model_facts` satisfy every ``model`` constraint of the answer (no
    facts: only an answer without ``model``)?"""
    if not answer.model:
        return True
    return facts is not None and all(n in facts and holds_constraint(c, facts[n])
                                     for n, c in answer.model)


def _text(obj: dict, key: str, at: str, required: bool) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise LedgerError(f"{at}: field '{key}' must be a non-empty string"
                          + ("" if required else " when given"))
    return value


def parse_server(obj: object, at: str) -> ServerAnswer:
    """Validate one entry's ``server`` field (``at``: where it is, for the message)."""
    if not isinstance(obj, dict):
        raise LedgerError(f"{at}: must be an object with 'status' and 'test'")
    extra = set(obj) - set(_KEYS)
    if extra:
        raise LedgerError(f"{at}: unknown fields {sorted(extra)}; allowed: {sorted(_KEYS)}")
    status = obj.get("status")
    if status not in STATUSES:
        raise LedgerError(f"{at}: field 'status' must be one of {list(STATUSES)} "
                          f"(got {status!r})")
    test = _text(obj, "test", at, True)
    if not _TEST.match(test):
        raise LedgerError(f"{at}: field 'test' must name a test as "
                          f"'tests/PATH.py::test_name' (got {test!r})")
    args = obj.get("server_args", {})
    if not isinstance(args, dict) or not all(
            isinstance(k, str) and k and (isinstance(v, _SCALARS) or (
                isinstance(v, list) and all(isinstance(x, _SCALARS) for x in v)))
            for k, v in args.items()):
        raise LedgerError(f"{at}: field 'server_args' must map ServerArgs field names to "
                          "JSON scalars or lists of them")
    env = obj.get("env", {})
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in env.items()):
        raise LedgerError(f"{at}: field 'env' must map variable names to strings")
    stand_in = obj.get("stand_in", {})
    if not isinstance(stand_in, dict) or not all(isinstance(k, str) and k for k in stand_in):
        raise LedgerError(f"{at}: field 'stand_in' must map the model stand-in's config.json "
                          "keys to values")
    model = obj.get("model", {})
    fields = _model_fields()
    if not isinstance(model, dict) or ("model" in obj and not model):
        raise LedgerError(f"{at}.model: must be a non-empty object of field -> constraint; "
                          f"fields: {sorted(fields)}")
    for name in model:
        if name not in fields:
            raise LedgerError(f"{at}.model.{name}: unknown field; allowed: {sorted(fields)}")
    model_c = tuple((n, check_constraint(c, fields[n], f"{at}.model.{n}"))
                    for n, c in sorted(model.items()))
    if model_c and status != "reachable":
        raise LedgerError(f"{at}: field 'model' is given only with status 'reachable' (it "
                          "narrows the Cases a server-level campaign classifies)")
    requests = _text(obj, "requests", at, status != "unreachable")
    guard = _text(obj, "guard", at, status == "unreachable")
    note = _text(obj, "note", at, False)
    bundle = obj.get("bundle")
    if status == "reachable":
        if not (isinstance(bundle, str) and bundle):
            raise LedgerError(f"{at}: status 'reachable' needs field 'bundle' (the path of a "
                              "server-level bundle that reproduces it)")
    elif bundle is not None:
        raise LedgerError(f"{at}: field 'bundle' is given only with status 'reachable' (got "
                          f"status {status!r}: a bundle that reproduces it makes it reachable)")
    sigs = obj.get("signatures", [])
    if not isinstance(sigs, list) or not sigs and "signatures" in obj or not all(
            isinstance(x, str) and x.startswith("server:") and len(x) > 7 for x in sigs):
        raise LedgerError(f"{at}: field 'signatures' must be a non-empty list of server-level "
                          f"signatures ('server:<check>', fnmatch patterns allowed), got "
                          f"{sigs!r}")
    if sigs and status != "reachable":
        raise LedgerError(f"{at}: field 'signatures' is given only with status 'reachable' "
                          f"(got status {status!r}: a server-level campaign classifies against "
                          "a reproduced answer only)")
    if status != "unreachable" and not args:
        raise LedgerError(f"{at}: status {status!r} needs field 'server_args' (the arguments "
                          "the release accepts)")
    return ServerAnswer(status, test, dict(args), dict(env), dict(stand_in), requests, guard,
                        bundle, note, tuple(sigs), model_c)


def server_text(answer: ServerAnswer | None) -> str:
    """One line: what the server-level answer is."""
    if answer is None:
        return "server: not answered"
    if answer.status == "unreachable":
        return f"server: unreachable (guard {answer.guard})"
    if answer.status == "probable":
        return "server: reachable (arguments accepted), bundle pending"
    return f"server: reachable (bundle {answer.bundle}; repro: swafuzz repro {answer.bundle})"


def _args_text(answer: ServerAnswer) -> str:
    parts = [f"{k}={json.dumps(v)}" for k, v in answer.server_args.items()]
    parts += [f"env {k}={v}" for k, v in answer.env.items()]
    parts += [f"model config {k}={json.dumps(v)}" for k, v in answer.stand_in.items()]
    parts += [f"Case model {k} {json.dumps(v)}" for k, v in answer.model]
    return ", ".join(parts) or "-"


def table(entries: list) -> str:
    """Markdown: one row per ledger entry (``Entry`` objects with ``server``)."""
    rows = ["| entry | releases | status | server args or guard | test |",
            "|---|---|---|---|---|"]
    for e in entries:
        a = e.server
        if a is None:
            rows.append(f"| {e.id} | {', '.join(e.releases) or 'any'} | not answered | - | - |")
            continue
        what = (f"guard: {a.guard}" + (f" (checked with: {_args_text(a)})"
                                         if a.server_args else "")
                if a.status == "unreachable" else f"{_args_text(a)}; requests: {a.requests}"
                + (f"; repro: `swafuzz repro {a.bundle}`" if a.status == "reachable" else ""))
        status = {"probable": "reachable (args accepted), bundle pending"}.get(a.status,
                                                                                a.status)
        rows.append(f"| {e.id} | {', '.join(e.releases) or 'any'} | {status} | "
                    f"{what.replace('|', '/')} | `{a.test}` |")
    return "\n".join(rows)
