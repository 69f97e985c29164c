"""A campaign does not spend its budget re-shrinking what the ledger knows (issue 19 defect 7:
316 of 336 cases of a run went to shrinking ledger-known bugs). A ledger-known entry's first Case
in a unit is shrunk with at most ``KNOWN_SHRINK_BUDGET`` cases (never more than the shrink
budget), counted per entry in ``KindResult.shrunk_known``; a new failure keeps the whole shrink
budget.

In-process, no target: ``run_case`` is a plain function (every ``decode`` Case of 3 steps or
more fails), the ledger a stand-in that knows that failure; hypothesis is seeded."""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.harness.ledger.known import KNOWN_SHRINK_BUDGET, known_summary
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.execute import Verdict


def run_case(case):
    if len(case.steps) >= 3:
        return Verdict(case, [Failure("invariants", f"{len(case.steps)} steps", "live", 0)], 1)
    return Verdict(case, [], 1)


class Ledger:
    """Knows every failure as entry ``e`` (no ``when``: reaching the cap stops the unit)."""

    def classify(self, case, v):
        return "e" if v.failed else None

    def can_exclude(self, eid):
        return False

    def excludes(self, eids, case):
        return False


def test_known_entry_shrinks_within_its_cap_new_failure_keeps_the_budget():
    known = Campaign(run_case, seed=0, shrink_budget=150, known=Ledger(), known_cap=5)
    k = known.run_kind("decode", 60)
    assert k.finding is None and "e" in k.known_findings
    assert 0 < k.shrunk <= KNOWN_SHRINK_BUDGET, k.shrunk
    assert k.shrunk_known == {"e": k.shrunk}
    assert len(k.known_findings["e"].case.steps) >= 3  # still the entry's failure
    new = Campaign(run_case, seed=0, shrink_budget=150).run_kind("decode", 60)
    assert new.finding is not None and new.shrunk > KNOWN_SHRINK_BUDGET, new.shrunk
    assert new.shrunk_known == {}
    # never more than --shrink-budget
    small = Campaign(run_case, seed=0, shrink_budget=3, known=Ledger(), known_cap=5)
    assert small.run_kind("decode", 60).shrunk <= 3


def test_run_summary_counts_known_shrinking_per_entry():
    rows = [{"unit": "decode.0", "known": {"e": 3}, "shrunk_known": {"e": 12}},
            {"unit": "decode.1", "known": {"e": 1}, "shrunk_known": {"e": 8}}]
    assert known_summary(rows)["e"]["shrunk"] == 20
