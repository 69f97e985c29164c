"""Run one Case: oracle + target under each executor + the checks -> a Verdict.

``execute(case, target, impl, executors)`` is in-process. ``harness.pipeline.worker.CaseWorker`` runs the
same function in a child process, so a crash inside a case (segfault, illegal memory access)
becomes a finding instead of the end of the campaign.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from swafuzz.checks.base import Failure
from swafuzz.checks.cross import check_agreement
from swafuzz.checks.observed import summarize_all
from swafuzz.checks.runner import run_checks
from swafuzz.harness.executors import get_executor
from swafuzz.harness.executors.base import CountingExecutor
from swafuzz.oracles.engine import AllocationRejected, CaseInfeasible, expect
from swafuzz.scenarios.case import Case
from swafuzz.targets import get_target, origin, release, run_case, versions


class InvalidCase(ValueError):
    """The oracle says the Case cannot run (a scenario-generator bug or a bad hand-made bundle)."""


class CaseRefused(Exception):
    """Raised by a campaign's runner for a Case its target does not run (a server-level Case
    the release's argument check refuses): not run, not counted; the campaign draws another
    (``hypothesis.reject``)."""


def resolve_impl(impl: str) -> str:
    """``auto`` -> ``triton`` (compiled on GPU, interpreted on CPU)."""
    if impl == "auto":
        return "triton"
    return impl


def resolve_executors(executor: str) -> list[str]:
    """The executors a Case runs under. ``auto``: eager plus the graph executor of this machine
    (cudagraph on a GPU, tape on CPU); ``all``: eager, tape and (with a GPU) cudagraph."""
    graph = "cudagraph" if torch.cuda.is_available() else "tape"
    if executor == "auto":
        return ["eager", graph]
    if executor == "all":
        return ["eager", "tape"] + (["cudagraph"] if torch.cuda.is_available() else [])
    return [executor]


@dataclass
class Verdict:
    case: Case
    failures: list[Failure] = field(default_factory=list)
    checks_run: int = 0
    seconds: float = 0.0
    observed: list[dict[str, Any]] | None = None  # failing only: checks.observed summaries
    #: what the target says it ran (``Observation.target_version``, e.g. "sglang 0.5.23"); None:
    #: swafuzz's own code
    target_version: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def signature(self) -> str:
        return self.failures[0].signature(self.case.kind) if self.failures else ""

    def identity(self) -> str:
        """The first failure's :meth:`~checks.base.Failure.identity` ("" when clean):
        shrinking keeps it."""
        return self.failures[0].identity(self.case.kind) if self.failures else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "failures": [f.to_json() for f in self.failures],
            "checks_run": self.checks_run,
            "seconds": self.seconds,
            "observed": self.observed,
            **({"target_version": self.target_version} if self.target_version else {}),
        }

    def finding(self, target: str, impl: str, executor: str, prefix: str = "") -> dict[str, Any]:
        """The bundle record of this failing verdict (``reports.bundle.write_bundle`` input)."""
        return {"signature": prefix + self.signature(), "check": self.failures[0].check,
                "message": self.failures[0].message,
                "failures": [f.to_json() for f in self.failures], "target": target,
                "plugin": origin(target), "impl": impl, "executor": executor,
                "versions": versions(target), "release": release(target),
                "case": self.case.to_json(), "shrunk": self.case.summary(),
                "observed": self.observed,
                **({"target_version": self.target_version} if self.target_version else {})}

    @staticmethod
    def from_json(case: Case, d: dict[str, Any]) -> Verdict:
        return Verdict(case, [Failure(**f) for f in d["failures"]], d["checks_run"], d["seconds"],
                       d.get("observed"), d.get("target_version"))


def needs_recapture_reference(case: Case, observations: list, only: set[str] | None) -> bool:
    """capture_freeze's reference run (issue 10): only when capture_freeze is on and a graph
    observation disagrees with the eager one - a graph-only divergence to attribute."""
    if only and "capture_freeze" not in only:
        return False
    eager = [o for o in observations if o.executor == "eager"]
    graph = [o for o in observations if o.executor in ("tape", "cudagraph")]
    if not eager or not graph:
        return False
    return any(check_agreement(case, [eager[0], g]) for g in graph)


def execute(case: Case, target: str = "unified", impl: str = "auto",
            executors: list[str] | None = None, only: set[str] | None = None) -> Verdict:
    """Run ``case`` on ``target`` x ``impl`` under each executor and check everything."""
    t0 = time.perf_counter()
    try:
        exp = expect(case)
    except CaseInfeasible as e:
        raise InvalidCase(str(e)) from None
    observations = [_observe(case, target, impl, name)
                    for name in executors or resolve_executors("auto")]
    if getattr(get_target(target), "allocation", "exact") == "observed":
        exp, fails = _observed_expectation(case, observations)
        if fails:
            return Verdict(case, fails, 1, time.perf_counter() - t0,
                           target_version=_target_version(observations))
    if needs_recapture_reference(case, observations, only):
        observations.append(_observe(case, target, impl, "tape_recapture"))
    fails, n = run_checks(case, observations, exp, only)
    observed = None
    if fails:
        observed = summarize_all(case, observations, exp)
    return Verdict(case, fails, n, time.perf_counter() - t0, observed,
                   _target_version(observations))


def _observe(case: Case, target: str, impl: str, executor: str):
    """``case`` run on ``target`` under ``executor``: its Observation, with the executor that
    ran and its graph use as the harness measured them (no self-report)."""
    ex = CountingExecutor(get_executor(executor))
    obs = run_case(case, target=target, impl=resolve_impl(impl), executor=ex)
    obs.executor, obs.graph_use = ex.name, ex.counts()
    return obs


def _target_version(observations: list) -> str | None:
    """The first observation's ``target_version`` (every executor runs the same target)."""
    return next((o.target_version for o in observations if o.target_version), None)


def _observed_expectation(case: Case, observations: list):
    """Observed-allocation targets (``sglang``): the oracle validates and follows the first
    observation's allocation choices; every executor's choices must be the same."""
    allocs = [[s.alloc or [] for s in o.steps] for o in observations]
    for o, a in zip(observations[1:], allocs[1:]):
        n = min(len(a), len(allocs[0]))
        if a[:n] != allocs[0][:n]:
            i = next(k for k in range(n) if a[k] != allocs[0][k])
            return None, [Failure("agreement", f"step {i}: the allocator chose {allocs[0][i]} "
                                  f"under {observations[0].executor} but {a[i]} under "
                                  f"{o.executor}", "allocation")]
    channels = [s.channels for s in observations[0].steps]  # e.g. a ring's slot choices
    try:
        return expect(case, observed_alloc=allocs[0], observed_channels=channels), []
    except AllocationRejected as e:
        o = observations[0]
        return None, [Failure("invariants", f"[{o.target}/{o.impl}/{o.executor}] {e}",
                              "allocation")]
