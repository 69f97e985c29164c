"""Campaigns: hypothesis generates Cases per scenario kind, a runner executes them, failing Cases
are shrunk, deduplicated by signature and written as bundles before the next case runs.

Per kind, ``@given(strategy)`` with ``max_examples`` and a fixed ``seed`` (same seed, same
Cases); exactly ``examples`` Cases are generated: a search that ends short (its draws repeated
Cases already run, answered from the memo) is followed by another with the next round's seed,
until a whole round adds no new Case (``KindResult.short`` then says so). The first failure is shrunk within ``shrink_budget`` executions (outcomes memoised, so
hypothesis's final replay agrees); the finding is the smallest Case failing the same way
(``Verdict.identity``: signature and, for an exception from the code under test, where it was
raised); a Case failing another way passes while shrinking.

``known`` (a :class:`swafuzz.harness.ledger.known.KnownLedger`; None: off): a known failing Case
does not end the search; the rules are in :mod:`swafuzz.harness.ledger.known`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hseed
from hypothesis.errors import Flaky, Unsatisfiable

from swafuzz import features
from swafuzz.harness.ledger.known import KNOWN_SHRINK_BUDGET, ROUND_SEED_STRIDE
from swafuzz.harness.pipeline.execute import CaseRefused, Verdict
from swafuzz.harness.pipeline.hypothesis_env import (
    HarnessStops,
    flaky_in_our_words,
    hypothesis_in_our_words,
    same_draws_in_any_process,
)
from swafuzz.machinery import HarnessError
from swafuzz.scenarios.case import Case

#: hypothesis searches (rounds) one unit may start to generate its ``examples`` Cases
MAX_ROUNDS = 64


class _Found(Exception):
    pass


class _OutOfTime(Exception):
    pass


class _Capped(Exception):
    pass


class _Spent(Exception):  # a restarted round generated what was left of the budget
    pass


class _ShrinkSpent(BaseException):
    """The shrink budget is spent: end hypothesis's shrink here (a BaseException, so hypothesis
    does not take it for a failure of the Case) rather than let it draw candidates that would
    only be answered 'passing' unseen; the smallest failing Case is already in ``best``."""


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
    # known failures (``Campaign.known``): generated Cases per ledger entry id, the shrunk
    # verdict of each entry's first Case, Cases rejected as inside a capped entry's region,
    # why the search stopped early ("known_cap:<id>", "all_excluded"), hypothesis runs
    known: dict[str, int] = field(default_factory=dict)
    known_findings: dict[str, Verdict] = field(default_factory=dict)
    excluded: int = 0
    stopped: str | None = None
    shrunk_known: dict[str, int] = field(default_factory=dict)  # shrinking cases per entry
    rounds: int = 1
    #: why fewer than ``examples`` Cases were generated though nothing ended the search (no
    #: finding, deadline or cap): Hypothesis drew no new distinct valid Case in a whole round
    short: str | None = None
    #: Hypothesis's own messages (health, slow shrinking, flakiness), in the run's words
    notes: list[str] = field(default_factory=list)


@dataclass
class Campaign:
    run_case: Callable[[Case], Verdict]
    seed: int = 0
    shrink: bool = True
    shrink_budget: int = 150
    progress: Callable[[str, int, int], None] | None = None
    on_first_failure: Callable[[Verdict], None] | None = None  # before shrinking starts
    # Hypothesis example database (``harness.pipeline.corpus.open_database``); None: off. With one, the
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
    known: object | None = None  # harness.ledger.known.KnownLedger: classify() / excludes(); None: off
    known_cap: int = 50  # Cases of one entry per search before its region is excluded
    #: cases spent shrinking a known entry's first Case (and never more than shrink_budget)
    known_shrink_budget: int = KNOWN_SHRINK_BUDGET
    on_known: Callable[[Verdict, str], None] | None = None  # an entry's shrunk first Case
    #: the Cases of a kind (default: the feature registry's strategy of the kind) and a Case's
    #: size while shrinking (smaller wins); a server-level campaign gives its own
    strategy: Callable[[str], object] | None = None
    size: Callable[[object], tuple] | None = None

    def run_kind(self, kind: str, examples: int) -> KindResult:
        res = KindResult(kind)
        self.results[kind] = res
        memo: dict[str, Verdict] = {}
        klass: dict[str, str | None] = {}  # Case key -> the ledger entry that knows it
        counted: set[str] = set()  # Cases counted in res.known
        excluded: set[str] = set()  # entries whose region is rejected before running
        t0 = time.perf_counter()
        rnd = 0
        # a new failure met while shrinking a known one (hypothesis keeps one shrink target):
        # the next rounds go on and normally find and shrink it; if not, it is the finding as is
        pending: Verdict | None = None
        while True:
            before = res.generated
            best, target, new = self._round(kind, examples, rnd, res, memo, klass, counted,
                                            excluded)
            if not best:
                # no failure: a round that drew Cases already run (distinct choice sequences,
                # same Case) or refused ends short of ``examples``; the next round (another
                # seed) draws the rest, until one adds nothing new (then say why)
                if res.stopped or res.out_of_time or res.generated >= examples:
                    break
                if res.generated == before or rnd + 1 >= MAX_ROUNDS:
                    res.short = (f"Hypothesis drew no further distinct valid Case of kind {kind} "
                                 f"({res.generated} of {examples} generated in {rnd + 1} "
                                 f"round{'s' if rnd else ''}: the kind's Cases are exhausted "
                                 "or refused)")
                    break
                rnd += 1
                res.rounds = rnd + 1
                continue
            if target is None:  # a new finding ends the search
                res.finding = best[0]
                break
            res.known_findings[target] = best[0]  # a known entry's first Case, shrunk
            if self.on_known:
                self.on_known(best[0], target)
            size = self.size or _size
            if new is not None and (pending is None or size(new.case) < size(pending.case)):
                pending = new
            if res.stopped or res.out_of_time or res.generated >= examples:
                break
            rnd += 1
            res.rounds = rnd + 1
        if res.finding is None and pending is not None:
            res.finding, res.cases_to_first = pending, res.generated
        res.seconds = time.perf_counter() - t0
        return res

    def _round(self, kind: str, examples: int, rnd: int, res: KindResult,
               memo: dict[str, Verdict], klass: dict[str, str | None], counted: set[str],
               excluded: set[str]) -> tuple[list[Verdict], str | None]:
        """One hypothesis search (round ``rnd`` of the unit, the budget left): the smallest
        failing Case's verdict (or nothing), the ledger entry it is of (None: new), and the
        smallest new failure met while shrinking a known one (or None)."""
        best: list[Verdict] = []
        state: dict = {"generated": 0, "after_fail": 0, "target": None, "capped": None,
                       "new_seen": None, "identity": None}
        known = self.known
        size_of = self.size or _size
        db = HarnessStops(self.database) if self.database is not None else None

        def stop(exc: Exception) -> Exception:  # the harness ends the search: nothing saved
            if db is not None:
                db.stopping = True
            return exc

        def classify(key: str, case: Case, v: Verdict) -> str | None:
            if known is None or not v.failed:
                return None
            if key not in klass:
                klass[key] = known.classify(case, v)
            return klass[key]

        def test(case: Case) -> None:
            if state["capped"]:
                raise stop(_Capped(state["capped"]))
            key = case.dumps()
            if not best and excluded and known.excludes(excluded, case):
                res.excluded += 1
                reject()  # inside a capped entry's region: not run (nor answered), not counted
            if key in memo:
                v = memo[key]
            elif best and state["after_fail"] >= (
                    self.shrink_budget if state["target"] is None
                    else min(self.shrink_budget, self.known_shrink_budget)):
                raise stop(_ShrinkSpent())  # shrink budget spent: nothing more runs
            else:
                if not best and self.deadline is not None and time.monotonic() > self.deadline:
                    raise stop(_OutOfTime())
                if not best and res.generated >= examples:
                    raise stop(_Spent())  # exactly ``examples`` generated Cases, whatever the round
                replayed = self.replay is not None and key in self.replay
                if replayed:
                    v = self.replay[key]
                else:
                    try:
                        v = self.run_case(case)
                    except CaseRefused:
                        reject()  # not run: neither generated nor shrinking, hypothesis goes on
                if not best:
                    state["generated"] += 1
                    res.generated += 1
                else:
                    state["after_fail"] += 1
                    res.shrunk += 1
                    if state["target"] is not None:
                        t = state["target"]
                        res.shrunk_known[t] = res.shrunk_known.get(t, 0) + 1
                if replayed:
                    res.replayed += 1
                else:
                    res.cases += 1
                    res.checks += v.checks_run
                    if self.on_case:
                        self.on_case(case, v, "shrink" if best else "generate")
                memo[key] = v
                if self.progress:
                    self.progress(kind, state["generated"], examples)
            if v.failed:
                eid = classify(key, case, v)
                if best and eid != state["target"]:
                    # another class of failure: passing for this shrink (hypothesis keeps one
                    # shrink target); a new one met while shrinking a known one is kept
                    new = state["new_seen"]
                    if eid is None and (new is None or size_of(case) < size_of(new.case)):
                        state["new_seen"] = v
                    return
                if best and eid is None and v.identity() != state["identity"]:
                    return  # fails another way (signature, or where it raised): not this one
                if not best and eid is not None and eid in res.known_findings:
                    if key not in counted:  # an entry already shrunk in this unit: go on
                        counted.add(key)
                        res.known[eid] = res.known.get(eid, 0) + 1
                        if res.known[eid] >= self.known_cap:
                            if known.can_exclude(eid):
                                excluded.add(eid)
                            else:
                                state["capped"] = res.stopped = f"known_cap:{eid}"
                    return
                if not best:
                    state["target"] = eid
                    state["identity"] = v.identity()
                    if eid is None:
                        res.cases_to_first = res.generated
                    elif key not in counted:
                        counted.add(key)
                        res.known[eid] = res.known.get(eid, 0) + 1
                    if self.on_first_failure:
                        self.on_first_failure(v)
                if not best or size_of(case) <= size_of(best[0].case):
                    best[:] = [v]
                raise _Found(v.signature())

        phases = None if self.shrink else [Phase.explicit, Phase.reuse, Phase.generate]
        # a restarted round's hypothesis counts the Cases it draws again (its first draw is
        # the simplest Case, often one already run): _Spent ends it at the unit's budget
        budget = 2 * (examples - res.generated) + 10 if rnd else examples
        sets = settings(max_examples=max(1, budget), database=db, deadline=None,
                        derandomize=False, print_blob=False, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        **({"phases": phases} if phases else {}))
        # seed before settings: hypothesis's @seed turns the example database off for the
        # settings it finds already applied, so settings (with the database) go on last
        seed = self.seed + ROUND_SEED_STRIDE * rnd
        strat = self.strategy(kind) if self.strategy else features.strategy(kind)()
        prop = sets(hseed(seed)(given(strat)(test)))
        if self.database is not None:
            # a stable key (hypothesis would otherwise hash this function's source, which is the
            # same for every kind and changes with every edit of this file)
            prop._hypothesis_internal_database_key = (
                f"swafuzz:{self.db_key}:{kind}".encode())
        try:
            with same_draws_in_any_process(), hypothesis_in_our_words(res.notes, kind):
                prop()
        except (_Found, _ShrinkSpent, _Capped, _Spent):
            pass  # best holds the smallest failing Case seen; res.stopped says why it stopped
        except _OutOfTime:
            res.out_of_time = True
        except Unsatisfiable:  # every Case hypothesis drew was in an excluded region
            if not best:
                res.stopped = res.stopped or "all_excluded"
        except Exception as e:  # noqa: BLE001 - hypothesis wraps errors; keep the finding
            if not best and isinstance(e, Flaky):  # nothing failed: the search itself wavered
                raise HarnessError(flaky_in_our_words(e, kind)) from None
            if not best:
                raise
            res.notes.append(f"kind {kind}: Hypothesis ended the shrink with {type(e).__name__}"
                             " (the Case's outcome changed between runs); the smallest failing"
                             " Case seen so far is the finding")
        return best, state["target"], state["new_seen"]


def _size(case: Case) -> tuple[int, int, int]:
    s = case.summary()
    return (s["steps"], s["requests"], len(case.dumps()))
