"""Run the registered checks (:mod:`checks.registry`) over one Case's Observations (one per
executor) and the oracle's Expectation; each returns a list of :class:`~checks.base.Failure`
(empty: passed). How a forward must run comes from the Case (``oracles.paths``), never from the
target's report. Messages name step, forward, layer, row or slot, expected and actual values, and
how many of how many differ.
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.checks.base import RECAPTURE_EXECUTOR, Failure, error_failure
from swafuzz.checks.registry import all_checks


def run_checks(case, observations: list, exp,
               only: set[str] | None = None) -> tuple[list[Failure], int]:
    """Every per-observation check over every observation (the recapture reference is a
    reference, not checked itself), then every check across observations (``agreement``
    across them, ``capture_freeze`` against the reference when one is present); ``only``
    restricts them to the checks it names. Returns (failures, checks run), earliest step first.
    A target error other than a contract refusal (or the refusal the window oracle predicts) is
    reported as check ``error``."""
    registry = [c for c in all_checks() if not only or c.name in only]
    fails: list[Failure] = []
    n = 0
    checked = [o for o in observations if o.executor != RECAPTURE_EXECUTOR]
    for obs in checked:
        for c in registry:
            if c.across:
                continue
            n += 1
            for f in c.fn(case, obs, exp):
                f.message = f"[{obs.target}/{obs.impl}/{obs.executor}] {f.message}"
                fails.append(f)
        if obs.error is not None and obs.error.get("type") != "ContractError" and \
                not any(p.expected_refusal(obs, exp) for p in features.parts("check")):
            fails.append(error_failure(obs))
    for c in registry:
        if not c.across:
            continue
        found = c.fn(case, observations)
        if found is not None:  # None: nothing to judge (one observation, no reference)
            n += 1
            fails += found
    fails.sort(key=Failure.order_key)  # earliest step and forward first (stable within)
    return fails, n
