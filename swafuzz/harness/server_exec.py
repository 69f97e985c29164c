"""One server-level Case executed for a campaign: the target's server level resolved
(:func:`pipeline_of`), the Case run under each executor (:func:`run_all`) and its verdict as
plain data (:class:`ServerResult`), in a case worker (:mod:`swafuzz.harness.worker`, the
default) or in the unit's own process (``--no-isolate``).

:class:`ServerResult` is what the campaign (:class:`swafuzz.harness.campaign.Campaign`), the
case log and the bundles see of a server-level Case: its failures (``server:<check>``
signatures), what stopped it out of scope, and the observation of a failing one (the bundle's
``observed``). A Case that kills its case worker (segfault, abort, a sticky device error) or
runs past the worker's timeout is a ``server:crash`` / ``server:timeout`` failure, as a
component-level Case's is ``crash/<kind>/crash``.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from swafuzz import features, targets
from swafuzz.harness.executors import get_executor
from swafuzz.harness.run import CaseRefused
from swafuzz.server.case import ServerCase, parse
from swafuzz.server.oracle import ServerFailure
from swafuzz.server.run import Pipeline, ServerRefused, ServerVerdict, execute

BUNDLE_VERSION = 1


def levels_of(target: str) -> tuple[str, ...]:
    """The levels ``target`` runs: a target offering a ``server_pipeline`` hook has both."""
    t = targets.find_target(target)
    return ("component", "server") if getattr(t, "server_pipeline", None) else ("component",)


def server_targets() -> list[str]:
    return [t for t in targets.available_targets() if "server" in levels_of(t)]


def mutants_of(target: str) -> dict[str, str]:
    hook = getattr(targets.find_target(target), "server_mutants", None)
    return hook() if callable(hook) else {}


def _optional(ref: str | None):
    """``module:attr`` loaded, or None when ``ref`` is None or its module does not exist."""
    if ref is None:
        return None
    try:
        return features.load(ref)
    except ModuleNotFoundError as e:
        if e.name != ref.split(":")[0]:
            raise
        return None


def pipeline_of(target: str) -> Pipeline:
    """``target``'s server level (imports what its hooks name; TargetUnavailable when the
    installed release lacks a hop)."""
    t = targets.get_target(target)  # the target's check_available hook
    return Pipeline(run=features.load(t.server_pipeline),
                    check=_optional(getattr(t, "server_refusal", None)),
                    mutants=mutants_of(target))


def run_all(case: ServerCase, pipeline: Pipeline, executors: list[str],
            mutant: str | None = None, impl: str = "torch") -> ServerVerdict:
    """``case`` under each executor (one eager run when the Case captures no graphs); the
    first failing verdict, else the last."""
    graphs = not case.config.disable_cuda_graph and bool(case.config.cuda_graph_bs_decode)
    v = None
    for name in executors if graphs else executors[:1]:
        v = execute(case, pipeline, impl, executor=get_executor(name), mutant=mutant)
        if v.failed:
            v.failures = [dataclasses.replace(f, message=f"[{name}] {f.message}")
                          for f in v.failures]
            return v
    return v


def bundle_of(v: ServerResult, target: str, mutant: str | None = None) -> dict:
    """The finding bundle of a failing :class:`ServerResult`."""
    return {"bundle_version": BUNDLE_VERSION, "level": "server", "target": target,
            "server_mutant": mutant, "signature": v.signature(), "case": v.case.to_json(),
            "failures": [f.to_json() for f in v.failures],
            "versions": targets.versions(target), "observed": v.observed}


@dataclass
class ServerResult:
    """A server-level Case's verdict as the campaign sees it (``Verdict``'s interface:
    ``failed``, ``signature()``, ``identity()``, ``checks_run``, ``seconds``)."""

    case: ServerCase
    failures: list[ServerFailure] = field(default_factory=list)
    out_of_scope: str | None = None
    observed: dict[str, Any] | None = None  # failing only: ServerObs.to_json()
    target_version: str | None = None
    seconds: float = 0.0
    checks_run: int = 0  # the server oracle judges a Case whole: 1 when it ran

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def signature(self) -> str:
        return self.failures[0].signature() if self.failures else ""

    def identity(self) -> str:
        """Shrinking keeps the failing check (the server oracle names no raising location)."""
        return self.signature()

    def to_json(self) -> dict[str, Any]:
        return {"failures": [f.to_json() for f in self.failures], "checks_run": self.checks_run,
                "seconds": self.seconds, "out_of_scope": self.out_of_scope,
                "observed": self.observed, "target_version": self.target_version}

    @staticmethod
    def from_json(case: ServerCase, d: dict[str, Any]) -> ServerResult:
        return ServerResult(case, [ServerFailure(**f) for f in d.get("failures") or []],
                            d.get("out_of_scope"), d.get("observed"), d.get("target_version"),
                            d.get("seconds", 0.0), d.get("checks_run", 0))

    @staticmethod
    def of(v: ServerVerdict, seconds: float) -> ServerResult:
        return ServerResult(v.case, list(v.failures), v.obs.out_of_scope,
                            v.obs.to_json() if v.failed else None,
                            v.obs.target_version or None, seconds, 1)


def crash_result(case: ServerCase, check: str, message: str) -> ServerResult:
    """The verdict of a Case that took its case worker down (``crash``) or ran past its
    timeout (``timeout``)."""
    return ServerResult(case, [ServerFailure(check, None, message)])


def case_size(case: ServerCase) -> tuple[int, int, int]:
    """A server-level Case's size while shrinking: requests, tokens, JSON length."""
    tokens = sum(r.prompt_len + r.max_new_tokens for r in case.requests)
    return (len(case.requests), tokens, len(case.dumps()))


def execute_server(case: ServerCase, pipeline: Pipeline, executors: list[str],
                   mutant: str | None, impl: str) -> ServerResult:
    """Run and judge ``case`` in this process; :class:`~swafuzz.harness.run.CaseRefused` when
    the target does not run it (its reason)."""
    t0 = time.perf_counter()
    try:
        v = run_all(case, pipeline, executors, mutant, impl)
    except ServerRefused as e:
        raise CaseRefused(str(e)) from None
    return ServerResult.of(v, time.perf_counter() - t0)


# --------------------------------------------------------------------- in the case worker
_PIPELINES: dict[str, Pipeline] = {}


def prepare(target: str) -> Pipeline:
    """This process's server level of ``target`` (resolved once; imports the release)."""
    if target not in _PIPELINES:
        _PIPELINES[target] = pipeline_of(target)
    return _PIPELINES[target]


def child_reply(msg: dict[str, Any]) -> dict[str, Any]:
    """A case worker's answer to a server-level Case message (``server_case``, ``target``,
    ``impl``, ``executors``, ``server_mutant``): ``ok`` (the result), ``refused`` (the
    target does not run it: the reason) or ``harness_error``."""
    try:
        case = parse(msg["server_case"])
        res = execute_server(case, prepare(msg["target"]), msg["executors"],
                             msg.get("server_mutant"), msg["impl"])
        return {"ok": res.to_json()}
    except CaseRefused as e:
        return {"refused": str(e)}
    except Exception as e:  # noqa: BLE001 - any harness exception is reported, not fatal
        return {"harness_error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}
