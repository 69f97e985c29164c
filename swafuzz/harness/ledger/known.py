"""The known-failure ledger consulted *during* a campaign (``swafuzz run --ledger``).

Without it a unit (one hypothesis search of one kind) ends at its first failing Case. With it,
each failing Case is classified by ``swafuzz report``'s rule (:mod:`swafuzz.harness.ledger.entries`:
target, releases, signature, ``when`` with the executors that ran it) and the campaign
(:class:`swafuzz.harness.pipeline.campaign.Campaign`):

* shrinks an entry's first Case in a unit within the entry (at most :data:`KNOWN_SHRINK_BUDGET`
  cases), writes ``findings/<signature>.known-<entry id>.json`` with ``ledger_entry``, and starts
  the next *round* (seed ``seed + ROUND_SEED_STRIDE * round``) with the ``--examples`` left;
* counts later Cases of that entry in the unit as passing;
* after ``--known-cap N`` Cases of one entry, rejects generated Cases its ``when`` holds on
  before they run (``excluded``); without ``when`` the cap stops the unit
  (``stopped: "known_cap:<id>"``);
* ends the unit at a *new* failure (shrunk with known Cases passing; one met while shrinking a
  known one takes over).

The exit code counts new findings only. ``--ledger auto`` (default): the repository's
``ledger/known_failures.json`` when it has an entry for a run target at its installed version;
``none``: off; ``FILE``: that ledger.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any

from swafuzz import targets
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, LedgerError, load_ledger
from swafuzz.harness.ledger.server import holds_model, model_facts

#: seed stride between the rounds of a unit (a prime far from the shard stride 7919)
ROUND_SEED_STRIDE = 104729
#: cases spent shrinking a ledger-known entry's first Case in a unit, at most (and never more
#: than ``--shrink-budget``)
KNOWN_SHRINK_BUDGET = 20


def target_release(target: str) -> str | None:
    """The version the ledger's ``releases`` / ``when.release`` are checked against: what the
    target's ``version`` hook says (e.g. the installed release of the package it drives, as
    recorded in its bundles); None for swafuzz's own targets (an entry's ``releases`` then do
    not restrict it)."""
    return targets.release(target)["version"]


def resolve_ledger(spec: str | None, targets: list[str]) -> str | None:
    """``--ledger`` -> the ledger file a run consults, or None. ``auto``: the repository ledger
    if one of its entries applies to one of ``targets`` at its release; ``none``: None; else a
    path, loaded here so a malformed ledger is refused before anything runs (LedgerError)."""
    if spec is None or spec == "none":
        return None
    if spec == "auto":
        if not os.path.isfile(DEFAULT_LEDGER):  # loud: without it every known bug would fail
            raise LedgerError(f"auto: the ledger shipped with swafuzz is missing "
                              f"({DEFAULT_LEDGER}; a broken install?); give --ledger FILE, "
                              "or --ledger none to run without one")
        entries = load_ledger(DEFAULT_LEDGER)
        if any(e.applies(t, target_release(t)) for e in entries for t in targets):
            return DEFAULT_LEDGER
        return None
    load_ledger(spec)
    return os.path.abspath(spec)


class KnownLedger:
    """The entries of a ledger that apply to one unit's target (at its release), and the two
    questions a campaign asks: which entry knows this failing Case (:meth:`classify`), and is
    this Case in an entry's region (:meth:`excludes`, before it runs)."""

    def __init__(self, entries: list, target: str, release: str | None,
                 executors: list[str]):
        self.target, self.release = target, release
        self.executors = tuple(executors)
        self.entries = [e for e in entries if e.applies(target, release)]
        self.by_id = {e.id: e for e in self.entries}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def classify(self, case, verdict) -> str | None:
        """The id of the first entry that knows ``verdict`` (a failing Verdict of ``case``):
        signature and ``when`` over the Case, with this unit's executors; None: new."""
        finding: dict[str, Any] = {"target": self.target, "signature": verdict.signature(),
                                   "executor": "+".join(self.executors)}
        e = next((e for e in self.entries if e.matches(finding, self.release, case)), None)
        return e.id if e is not None else None

    def can_exclude(self, eid: str) -> bool:
        """An entry's region can be excluded before running only if it has a ``when``."""
        return self.by_id[eid].when is not None

    def excludes(self, eids, case) -> bool:
        """Does the ``when`` predicate of one of the entries ``eids`` hold on ``case``?"""
        return any(self.by_id[i].when.holds(case, self.release, self.executors) for i in eids
                   if self.by_id[i].when is not None)


def unit_ledger(path: str | None, target: str, executors: list[str] | None = None,
                cls: type = None) -> KnownLedger | None:
    """The ledger of a unit (``cls``: :class:`KnownLedger`, :class:`ServerKnownLedger`), or
    None (no ledger, or no entry that classifies the target's findings at its release)."""
    if path is None:
        return None
    led = (cls or KnownLedger)(load_ledger(path), target, target_release(target),
                               executors or [])
    return led if led else None


class ServerKnownLedger(KnownLedger):
    """The entries with a server-level answer that classifies (``signatures``) and applies to
    the unit's target at its release: an entry knows a failing server-level Case when the
    failure's signature matches and the Case's config holds the answer's ``server_args``
    (:func:`server_known`), the region ``--known-cap`` excludes."""

    def __init__(self, entries: list, target: str, release: str | None,
                 executors: list[str] | None = None):
        super().__init__([e for e in entries if e.server is not None and e.server.signatures],
                         target, release, executors or [])

    def classify(self, case, verdict) -> str | None:
        return server_known(self.entries, self.target, self.release,
                            case.config.server_args(), verdict.signature(), model_facts(case))

    def can_exclude(self, eid: str) -> bool:
        return True  # a reachable answer always has server_args (ledger_server.parse_server)

    def excludes(self, eids, case) -> bool:
        args, facts = case.config.server_args(), model_facts(case)
        return any(holds_args(self.by_id[i].server, args)
                   and holds_model(self.by_id[i].server, facts) for i in eids)


def server_known(entries: list, target: str, release: str | None, config: dict,
                 signature: str, model: dict | None = None) -> str | None:
    """The id of the first ledger entry (``Entry`` objects with ``server``) that knows a
    failing server-level Case (target and release, a signature its answer's ``signatures``
    match, ``server_args`` held by the Case's ``config``, a ``ServerConfig.server_args()``
    dict, and the answer's ``model`` constraints by ``model``, the Case's
    :func:`~swafuzz.harness.ledger.server.model_facts`; None: only answers without ``model``
    know it), or None: new."""
    for e in entries:
        a = e.server
        if (a is not None and any(fnmatch.fnmatchcase(signature, p) for p in a.signatures)
                and e.applies(target, release) and holds_args(a, config)
                and holds_model(a, model)):
            return e.id
    return None


def holds_args(answer, config: dict) -> bool:
    """Does a server config (``ServerConfig.server_args()``) hold every ``server_args`` value of
    the answer (a bool is not an int here)?"""
    return all(k in config and config[k] == v
               and isinstance(config[k], bool) == isinstance(v, bool)
               for k, v in answer.server_args.items())


def known_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Unit rows -> ``{entry id: {"signature", "cases", "shrunk", "bundle", "units"}}`` over
    the run (``run.json``'s ``known``; what ``swafuzz run`` prints); ``shrunk``: cases spent
    shrinking the entry's first Cases (at most :data:`KNOWN_SHRINK_BUDGET` per unit)."""
    out: dict[str, dict[str, Any]] = {}

    def entry(eid: str) -> dict[str, Any]:
        return out.setdefault(eid, {"signature": None, "cases": 0, "shrunk": 0, "bundle": None,
                                    "units": []})

    for r in rows:
        for eid, n in (r.get("known") or {}).items():
            k = entry(eid)
            k["cases"] += n
            k["units"].append(r["unit"])
        for eid, n in (r.get("shrunk_known") or {}).items():
            entry(eid)["shrunk"] += n
        for eid, f in (r.get("known_findings") or {}).items():
            k = entry(eid)
            k["signature"] = k["signature"] or f.get("signature")
            k["bundle"] = k["bundle"] or f.get("bundle")
    return out


def print_known(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Print one ``KNOWN`` line per ledger entry the run met (Cases, units, bundle) and the
    units stopped early; return :func:`known_summary`."""
    known = known_summary(rows)
    for eid, k in sorted(known.items()):
        print(f"KNOWN {k['signature']}: ledger entry {eid}, {k['cases']} failing Cases in "
              f"{len(k['units'])} unit(s), {k['shrunk']} cases shrinking (at most "
              f"{KNOWN_SHRINK_BUDGET} per unit) (not a failure of this run)")
        if k["bundle"] and os.path.exists(k["bundle"]):
            print(f"  swafuzz repro {k['bundle']}")
    for r in rows:
        if r.get("stopped") or r.get("excluded"):
            print(f"  unit {r['unit']}: {r.get('excluded') or 0} Cases skipped in capped "
                  f"entries' regions" + (f", stopped: {r['stopped']}" if r.get("stopped")
                                          else ""))
    return known
