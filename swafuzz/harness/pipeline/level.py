"""The levels a campaign runs at, one protocol (:class:`Level`): ``component``
(:class:`ComponentLevel`: Cases of steps on the target's components) and ``server``
(:class:`swafuzz.harness.pipeline.level_server.ServerLevel`: server arguments + requests through
the target's server pipeline). The level (``RunConfig.level``, ``level`` of ``run.json`` and of a
bundle) is asked where the shared run pipeline differs; its kinds: ``features.kind_names(level)``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Protocol

from swafuzz.features.validation import load_case
from swafuzz.harness.ledger.known import unit_ledger
from swafuzz.harness.pipeline.execute import Verdict, execute
from swafuzz.harness.pipeline.level_server import ServerLevel
from swafuzz.harness.pipeline.runconfig import RunConfig, Unit
from swafuzz.harness.pipeline.throughput import forward_count
from swafuzz.reports.bundle import signature_filename, smaller_there, write_bundle

LEVELS = ("component", "server")


class Level(Protocol):
    """What differs between the levels (one instance per unit: it may keep state, as the
    server level keeps the release's refusal of the unit's Cases)."""

    name: str
    #: the run options it does not take: (flag, argparse attribute, default, the message)
    unsupported: tuple[tuple[str, str, Any, str], ...]
    strategy: Callable[[str], Any] | None  # kind -> SearchStrategy (None: the registry's)
    size: Callable[[Any], tuple] | None  # a Case's size while shrinking (None: campaign's)

    def load(self, case_json: dict[str, Any]) -> Any: ...  # the Case of a log row / bundle
    def replayed(self, case, row: dict[str, Any]) -> Any: ...  # a logged row's verdict
    def known(self, cfg: RunConfig, unit: Unit) -> Any: ...  # the unit's ledger, or None
    def in_worker(self, worker) -> Callable: ...  # case -> verdict, in the case worker
    def in_process(self, cfg: RunConfig, unit: Unit) -> Callable: ...  # --no-isolate
    def row_extra(self, cfg: RunConfig, case, v) -> dict[str, Any]: ...  # case-row fields
    def finding(self, cfg: RunConfig, unit: Unit, v) -> dict[str, Any]: ...  # bundle record
    def write(self, out: str, rec: dict, suffix: str, smallest: bool) -> str: ...  # bundle
    def unit_extra(self, out: str, unit: Unit, path: str | None, res) -> dict[str, Any]: ...


def get(name: str) -> Level:
    """A fresh level object of ``name`` (``RunConfig.level``)."""
    return ServerLevel() if name == "server" else ComponentLevel()


def of_file(path: str | None, name: str = "run.json") -> str:
    """The level of a run directory (its ``run.json``) or of a bundle file: ``server`` where
    the file says so, else ``component`` (an unreadable file: component, whose reader names
    the error)."""
    if not path:
        return "component"
    if os.path.isdir(path):
        path = os.path.join(path, name)
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return "component"
    return "server" if isinstance(obj, dict) and obj.get("level") == "server" else "component"


class ComponentLevel:
    """The component level (:class:`~swafuzz.scenarios.case.Case`,
    :class:`~swafuzz.harness.pipeline.execute.Verdict`)."""

    name = "component"
    unsupported = (("--server-mutant", "server_mutant", None, "only with --level server "
                    "(component-level mutants: swafuzz zoo, --target mutant:NAME)"),)
    strategy = None  # the feature registry's strategy of the kind
    size = None  # campaign._size

    @staticmethod
    def load(case_json):
        return load_case(case_json)

    @staticmethod
    def replayed(c, row) -> Verdict:
        return (Verdict.from_json(c, row["verdict"]) if row.get("failed")
                else Verdict(c, [], row.get("checks", 0), row.get("seconds", 0)))

    @staticmethod
    def known(cfg: RunConfig, unit: Unit):
        return unit_ledger(cfg.ledger, unit.target, cfg.executors)

    @staticmethod
    def in_worker(worker) -> Callable:
        return worker.run

    @staticmethod
    def in_process(cfg: RunConfig, unit: Unit) -> Callable:
        return lambda case: execute(case, unit.target, cfg.impl, cfg.executors)

    @staticmethod
    def row_extra(cfg: RunConfig, case, v) -> dict[str, Any]:
        return {"forward_steps": forward_count(case) * len(cfg.executors)}

    @staticmethod
    def finding(cfg: RunConfig, unit: Unit, v) -> dict[str, Any]:
        """The bundle record (``executors``: what ran; ``executor`` is the label asked for)."""
        rec = v.finding(unit.target, cfg.impl, cfg.executor_label, cfg.prefix(unit.target))
        return {**rec, "executors": list(cfg.executors)}

    @staticmethod
    def write(out: str, rec: dict[str, Any], suffix: str, smallest: bool) -> str:
        if not smallest:
            return write_bundle(out, rec, suffix)
        path = os.path.join(out, "findings",
                            signature_filename(rec["signature"]) + suffix + ".json")
        if not smaller_there(path, rec, case_size):
            return write_bundle(out, rec, suffix=suffix)
        return path

    @staticmethod
    def unit_extra(out: str, unit: Unit, path: str | None, res) -> dict[str, Any]:
        return {}


def case_size(case_json: dict[str, Any]) -> tuple[int, int, int]:
    """A component-level Case's size (its JSON): steps, requests, JSON length."""
    s = load_case(case_json).summary()
    return (s["steps"], s["requests"], len(json.dumps(case_json)))
