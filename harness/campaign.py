"""Campaigns: hypothesis generates Cases per scenario kind, a runner executes them, failing Cases
are shrunk, deduplicated by signature and written as bundles before the next case runs.

Search: for each kind, ``@given(strategy)`` with ``max_examples`` and a fixed ``seed`` (the same
seed gives the same Cases). On the first failure hypothesis shrinks; shrinking is bounded by
``shrink_budget`` executions (Cases past the budget are reported as passing without running, and
outcomes are memoised so hypothesis's final replay of the smallest failing Case is consistent).
The smallest failing Case seen is the finding.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from swafuzz.harness.run import Verdict
from swafuzz.scenarios.case import Case
from swafuzz.scenarios.strategies import SCENARIO_KINDS


class _Found(Exception):
    pass


class _OutOfTime(Exception):
    pass


@dataclass
class KindResult:
    kind: str
    cases: int = 0  # cases executed (including shrinking)
    generated: int = 0  # cases generated before the first failure (the --examples budget)
    shrunk: int = 0  # cases executed while shrinking
    replayed: int = 0  # cases answered from an earlier run's log (--resume), not executed
    cases_to_first: int | None = None  # generated cases until the first failure
    out_of_time: bool = False  # the deadline ended the search
    checks: int = 0
    seconds: float = 0.0
    finding: Verdict | None = None  # the smallest failing Case's verdict


@dataclass
class Campaign:
    run_case: Callable[[Case], Verdict]
    seed: int = 0
    shrink: bool = True
    shrink_budget: int = 150
    progress: Callable[[str, int, int], None] | None = None
    on_first_failure: Callable[[Verdict], None] | None = None  # before shrinking starts
    # Hypothesis example database (``harness.corpus.open_database``); None: off. With one, the
    # failing Cases a campaign found are saved under ``db_key``/kind and replayed first by the
    # next campaign with the same key (reuse phase), on this machine or another sharing the DB.
    database: object | None = None
    db_key: str = "unified"
    results: dict[str, KindResult] = field(default_factory=dict)
    deadline: float | None = None  # time.monotonic() after which no new Case is generated
    #: verdicts already recorded by an earlier run of the same campaign (``--resume``), by
    #: ``Case.dumps()``: answered without executing, so nothing runs or is logged twice
    replay: dict[str, Verdict] | None = None
    on_case: Callable[[Case, Verdict, str], None] | None = None  # executed: (case, v, phase)

    def run_kind(self, kind: str, examples: int) -> KindResult:
        res = KindResult(kind)
        self.results[kind] = res
        memo: dict[str, Verdict] = {}
        best: list[Verdict] = []
        state = {"generated": 0, "after_fail": 0}
        t0 = time.perf_counter()

        def test(case: Case) -> None:
            key = case.dumps()
            if key in memo:
                v = memo[key]
            elif best and state["after_fail"] >= self.shrink_budget:
                return  # shrink budget spent: treat unseen Cases as passing
            else:
                if not best and self.deadline is not None and time.monotonic() > self.deadline:
                    raise _OutOfTime
                if not best:
                    state["generated"] += 1
                    res.generated += 1
                else:
                    state["after_fail"] += 1
                    res.shrunk += 1
                if self.replay is not None and key in self.replay:
                    v = self.replay[key]
                    res.replayed += 1
                else:
                    v = self.run_case(case)
                    res.cases += 1
                    res.checks += v.checks_run
                    if self.on_case:
                        self.on_case(case, v, "shrink" if best else "generate")
                memo[key] = v
                if self.progress:
                    self.progress(kind, state["generated"], examples)
            if v.failed:
                if not best:
                    res.cases_to_first = state["generated"]
                    if self.on_first_failure:
                        self.on_first_failure(v)
                if not best or _size(case) <= _size(best[0].case):
                    best[:] = [v]
                raise _Found(v.signature())

        phases = None
        if not self.shrink:
            from hypothesis import Phase

            phases = [Phase.explicit, Phase.reuse, Phase.generate]
        sets = settings(max_examples=max(1, examples), database=self.database, deadline=None,
                        derandomize=False, print_blob=False, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        **({"phases": phases} if phases else {}))
        # seed before settings: hypothesis's @seed turns the example database off for the
        # settings it finds already applied, so settings (with the database) go on last
        prop = sets(hseed(self.seed)(given(SCENARIO_KINDS[kind]())(test)))
        if self.database is not None:
            # a stable key (hypothesis would otherwise hash this function's source, which is the
            # same for every kind and changes with every edit of this file)
            prop._hypothesis_internal_database_key = (
                f"swafuzz:{self.db_key}:{kind}".encode())
        try:
            prop()
        except _Found:
            pass
        except _OutOfTime:
            res.out_of_time = True
        except Exception as e:  # noqa: BLE001 - hypothesis wraps errors; keep the finding
            if not best:
                raise
            print(f"note: hypothesis ended with {type(e).__name__}", file=sys.stderr)
        res.seconds = time.perf_counter() - t0
        if best:
            res.finding = best[0]
        return res


def _size(case: Case) -> tuple[int, int, int]:
    s = case.summary()
    return (s["steps"], s["requests"], len(case.dumps()))
