"""Every scenario kind of the registry, one generic test each (OpInfo-style): the kind's strategy
builds valid Cases that round-trip through JSON, and its simplest Case is small.

Verified by, for each kind in ``features.kind_names()``: a few drawn Cases carry the kind, parse
back equal from their JSON (``Case.from_json(case.to_json())``, which validates them, and
``Case.loads(case.dumps())``), pass the owning feature's validators and are counted as using
that feature; the Case Hypothesis shrinks to (``hypothesis.find`` of any Case) starts with an
admission and has at most three steps; and ``unified`` agrees with the oracle on a few
Cases of the kind (eager and tape executors). A new kind is covered by adding it to its feature's
record. Reproduce: ``pytest tests/features/test_kinds.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from swafuzz.scenarios.case import Case

KINDS = features.kind_names()
#: a resource-gated kind (``Kind.ram_bytes > 0``: a Case needs GBs of RAM) runs its Cases here
#: only under ``-m bigmem`` (drawing them is cheap); the plugin skips it otherwise, with the reason
RUN_KINDS = [pytest.param(k, marks=pytest.mark.bigmem) if k in features.gated_kinds() else k
             for k in KINDS]


@pytest.mark.parametrize("kind", KINDS)
def test_kind_generates_valid_cases_that_round_trip(kind):
    feat = features.feature_of_kind(kind)
    validators = [features.load(ref) for ref in feat.validators]

    @settings(max_examples=5, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        assert isinstance(case, Case) and case.kind == kind
        assert Case.from_json(case.to_json()) == case
        assert Case.loads(case.dumps()) == case
        for check in validators:
            check(case)
        assert feat in features.features_using(case)

    prop()


@pytest.mark.parametrize("kind", KINDS)
def test_kind_shrinks_to_a_short_case(kind):
    """Derandomized in every profile: the shrinker is a local search, and from some random
    starts it stops in a longer local minimum (``verify_reject``: about 1 start in 12 ended at
    admit, verify, finish, admit - a churn action after the trigger on a pool with no room for
    another verify), so with ``dev``'s random seeds this test failed now and then while ``ci``'s
    fixed seed passed. What it checks is that the kind *can* shrink to a short Case, from one
    fixed start; how often exploration gets there is not a CI question."""
    case = find(features.strategy(kind)(), lambda c: True,
                settings=settings(database=None, max_examples=20, derandomize=True,
                                  suppress_health_check=[HealthCheck.too_slow,
                                                         HealthCheck.data_too_large]))
    assert case.steps and case.steps[0].op == "admit", case
    assert len(case.steps) <= 3, case


@pytest.mark.parametrize("kind", RUN_KINDS)
def test_unified_agrees_with_the_oracle(kind):
    """The ``unified`` target and the oracle agree, bit for bit and on every check, on a few Cases
    of each kind, eager and on the tape (graph) executor (torch kernels: the interpreter's
    Triton path is the zoo's and the campaigns'). A refused or infeasible Case is not drawn:
    kinds build only valid Cases."""

    @settings(max_examples=3, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "unified", "torch", ["eager", "tape"])
        assert not v.failed, [f.message for f in v.failures][:3]

    prop()
