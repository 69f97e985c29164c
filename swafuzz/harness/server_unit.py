"""The server level of a campaign's unit (:func:`swafuzz.harness.unit.run_unit` with
``RunConfig.level == "server"``): the same unit, case log, case worker, budget, resume and pool
as the component level, over server-level Cases (:mod:`swafuzz.server`).

What differs is here (:class:`ServerLevel`, the counterpart of
:class:`swafuzz.harness.unit.ComponentLevel`): Cases drawn by
:func:`swafuzz.server.strategies.server_cases`, run by the case worker's server side
(:meth:`swafuzz.harness.worker.CaseWorker.run_server`) or in the unit's process
(``--no-isolate``), a Case the release refuses is not run nor counted (its reason is the unit
row's ``refused``), the ledger's server-level answers (:class:`ServerKnownLedger`: a reachable
entry's ``signatures`` on a Case with its ``server_args``, at the release;
:func:`swafuzz.harness.ledger_server.server_known`) in the role the component level's
:class:`swafuzz.harness.known.KnownLedger` has, and bundles in the server level's layout:
``findings/server-<check>.<kind>.json`` (:func:`bundle_path`), one per signature and kind, the
smallest Case of the units of that kind (a known entry's:
``findings/server-<check>.<kind>.known-<entry>.json``).

Case rows add ``out_of_scope`` (why the pipeline stopped the Case early, or null); unit rows
add ``bundle`` (the finding's bundle, relative to the run directory), ``stopped_out_of_scope``
(the unit's Cases the pipeline stopped out of scope, over every session of the run) and
``refused`` (the release's reason for the Cases it did not run, or null).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from swafuzz.harness.caselog import read_log
from swafuzz.harness.known import load_entries, target_release
from swafuzz.harness.ledger_server import holds_args, server_known
from swafuzz.harness.run import CaseRefused
from swafuzz.harness.server_exec import (
    ServerResult,
    bundle_of,
    case_size,
    execute_server,
    prepare,
)
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.server.case import ServerCase, parse
from swafuzz.server.strategies import server_cases


def bundle_path(signature: str, kind: str, suffix: str = "") -> str:
    """A server-level finding's bundle, relative to the run directory."""
    return os.path.join("findings", f"{signature.replace(':', '-')}.{kind}{suffix}.json")


def write_json_atomic(path: str, obj: dict) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


class ServerKnownLedger:
    """The ledger entries with a server-level answer that can classify (``signatures``) and
    apply to one unit's target at its release; the questions a campaign asks
    (:class:`swafuzz.harness.campaign.Campaign`, as of :class:`swafuzz.harness.known.
    KnownLedger`): which entry knows this failing Case, and is a Case in an entry's region
    (its config holds the entry's ``server_args``: the region ``--known-cap`` excludes)."""

    def __init__(self, entries: list, target: str, release: str | None):
        self.target, self.release = target, release
        self.entries = [e for e in entries if e.server is not None and e.server.signatures
                        and e.applies(target, release)]
        self.by_id = {e.id: e for e in self.entries}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def classify(self, case: ServerCase, verdict: ServerResult) -> str | None:
        return server_known(self.entries, self.target, self.release,
                            case.config.server_args(), verdict.signature())

    @staticmethod
    def can_exclude(eid: str) -> bool:
        return True  # a reachable answer always has server_args (ledger_server.parse_server)

    def excludes(self, eids, case: ServerCase) -> bool:
        args = case.config.server_args()
        return any(holds_args(self.by_id[i].server, args) for i in eids)


def server_ledger(path: str | None, target: str) -> ServerKnownLedger | None:
    """The :class:`ServerKnownLedger` of a unit, or None (no ledger, or no entry that
    classifies server-level findings of the target at its release)."""
    if path is None:
        return None
    led = ServerKnownLedger(load_entries(path), target, target_release(target))
    return led if led else None


class ServerLevel:
    """What a unit does with server-level Cases (one instance per unit: it keeps the reason
    the release gave for the Cases it refused)."""

    def __init__(self) -> None:
        self.refused: str | None = None

    @staticmethod
    def known(cfg, unit) -> ServerKnownLedger | None:
        return server_ledger(cfg.ledger, unit.target)

    @staticmethod
    def strategy(kind: str):
        return server_cases(kind)

    @staticmethod
    def size(case: ServerCase) -> tuple[int, int, int]:
        return case_size(case)

    @staticmethod
    def load(case_json: dict[str, Any]) -> ServerCase:
        return parse(case_json)

    @staticmethod
    def replayed(c: ServerCase, row: dict[str, Any]) -> ServerResult:
        if row.get("failed"):
            return ServerResult.from_json(c, row["verdict"])
        return ServerResult(c, [], row.get("out_of_scope"), seconds=row.get("seconds", 0.0),
                            checks_run=row.get("checks", 0))

    def _refusing(self, run: Callable[[ServerCase], ServerResult]) -> Callable:
        def run_one(case: ServerCase) -> ServerResult:
            try:
                return run(case)
            except CaseRefused as e:
                self.refused = str(e)
                raise
        return run_one

    def in_worker(self, worker) -> Callable:
        return self._refusing(worker.run_server)

    def in_process(self, cfg, unit) -> Callable:
        pipeline = prepare(unit.target)
        return self._refusing(lambda case: execute_server(case, pipeline, cfg.executors,
                                                          cfg.server_mutant, cfg.impl))

    @staticmethod
    def row_extra(cfg, case: ServerCase, v: ServerResult) -> dict[str, Any]:
        return {"out_of_scope": v.out_of_scope}

    @staticmethod
    def finding(cfg, unit, v: ServerResult) -> dict[str, Any]:
        return {**bundle_of(v, unit.target, cfg.server_mutant), "kind": unit.kind}

    @staticmethod
    def write(out: str, rec: dict[str, Any], suffix: str, smallest: bool) -> str:
        """Write the bundle ``rec``; with ``smallest``, unless the one already there (another
        unit's of the same kind) holds a smaller Case."""
        path = os.path.join(out, bundle_path(rec["signature"], rec["kind"], suffix))
        if smallest:
            try:
                with open(path) as f:
                    old = json.load(f)
                if case_size(parse(old["case"])) <= case_size(parse(rec["case"])):
                    return path
            except (OSError, ValueError, KeyError):
                pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # the repro line from the run directory, as a component-level bundle's
        rec = {**rec, "command": "swafuzz repro " + os.path.relpath(path, out).replace(os.sep, "/")}
        write_json_atomic(path, rec)
        return path

    def unit_extra(self, out: str, unit, path: str | None, res) -> dict[str, Any]:
        stopped = sum(1 for r in read_log(os.path.join(out, "cases.jsonl"))
                      if r.get("unit") == unit.id and r.get("out_of_scope"))
        return {"bundle": os.path.relpath(path, out) if path else None,
                "stopped_out_of_scope": stopped, "refused": self.refused}
