"""Observed-allocation mode of the engine oracle (targets whose allocator picks pages itself,
like ``sglang``): the oracle validates the reported choices and predicts from them; ``unified``
keeps the exact predictions. Runs without sglang."""

from __future__ import annotations

import pytest

from swafuzz.harness.pipeline.execute import execute
from swafuzz.oracles.engine import AllocationRejected, expect
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step
from swafuzz.targets import TARGETS, register
from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.engine import UnifiedEngine


def _case(p: int = 1) -> Case:
    return Case(
        pool=PoolConfig(page_size=p, full_pages=12, swa_pages=10, window=2),
        graph=GraphConfig(buckets=(1, 2, 4), topk=1, num_steps=2, num_draft_tokens=2),
        steps=(Step("admit", rid=0, length=3), Step("admit", rid=1, length=2),
               Step("decode", rids=(0, 1)), Step("evict", rid=0), Step("finish", rid=1),
               Step("admit", rid=2, length=2), Step("decode", rids=(2, 0), exec="graph")),
        kind="episode")


class _Logging(SWAAllocator):
    """The model's allocator (lowest free page first) reporting every token it allocated, in
    contract order, like an observed-allocation target."""

    def __init__(self, pool, device="cpu"):
        super().__init__(pool, device)
        self.alloc_log: list[list[int]] = []

    def extend(self, plan):
        out = super().extend(plan)
        for new in out:
            self.alloc_log += [[f, int(self.mapping[f])] for f in new]
        return out

    def take_alloc_log(self):
        log, self.alloc_log = self.alloc_log, []
        return log


class _HighestFirst(_Logging):
    """Hands out the highest free page on each side instead (a different, valid policy)."""

    def extend(self, plan):
        import swafuzz.targets.allocator as mod

        mod.min = max  # the module's ``min(free pages)`` now picks the highest free page
        try:
            return super().extend(plan)
        finally:
            del mod.min


class _BadPage(_HighestFirst):
    """Reports a page the oracle knows is not free (the page of an earlier token)."""

    def take_alloc_log(self):
        log = super().take_alloc_log()
        if len(log) >= 2:
            log[1] = list(log[0])
        return log


class HighestFirstEngine(UnifiedEngine):
    allocator_cls = _HighestFirst
    allocation = "observed"


class BadPageEngine(UnifiedEngine):
    allocator_cls = _BadPage
    allocation = "observed"


@pytest.fixture(autouse=True)
def _targets():
    register("test:highest_first", HighestFirstEngine)
    register("test:bad_page", BadPageEngine)
    yield
    TARGETS.pop("test:highest_first", None)
    TARGETS.pop("test:bad_page", None)


def _observed(case: Case, engine=HighestFirstEngine) -> list[list[list[int]]]:
    obs = engine(case, impl="torch").run()
    assert obs.error is None, obs.error
    return [s.alloc for s in obs.steps]


class LoggingEngine(UnifiedEngine):
    allocator_cls = _Logging
    allocation = "observed"


@pytest.mark.parametrize("p", [1, 2])
def test_lowest_first_choices_give_the_exact_expectation(p):
    case = _case(p)
    obs = UnifiedEngine(case, impl="torch").run()
    assert all(s.alloc is None for s in obs.steps)  # exact-mode targets report nothing
    exact = expect(case)
    got = expect(case, observed_alloc=_observed(case, LoggingEngine))
    assert [e.mapping for e in got.steps] == [e.mapping for e in exact.steps]
    assert [e.free_swa_pages for e in got.steps] == [e.free_swa_pages for e in exact.steps]
    assert [f.targets for f in got.forwards] == [f.targets for f in exact.forwards]
    assert got.steps[-1].pools == exact.steps[-1].pools


@pytest.mark.parametrize("p", [1, 2])
def test_other_valid_policy_is_followed(p):
    case = _case(p)
    alloc = _observed(case)
    exp = expect(case, observed_alloc=alloc)
    obs = HighestFirstEngine(case, impl="torch").run()
    assert [s.mapping for s in obs.steps] == [e.mapping for e in exp.steps]
    assert exp.steps[0].mapping != expect(case).steps[0].mapping  # really a different policy
    v = execute(case, "test:highest_first", "torch", ["eager", "tape"])
    assert not v.failed, [f.message for f in v.failures]


def test_unified_target_stays_exact():
    """A target without ``allocation = "observed"`` is judged by the exact policy: the
    highest-first allocator registered as an exact target fails the mapping check."""
    register("test:highest_exact", type("E", (HighestFirstEngine,), {"allocation": "exact"}))
    try:
        v = execute(_case(2), "test:highest_exact", "torch", ["eager"])
    finally:
        TARGETS.pop("test:highest_exact", None)
    # the exact oracle predicts other slots than this allocator chose: the writes disagree
    assert v.failed and {f.check for f in v.failures} & {"write_targets", "pool_bytes"}


def test_invalid_choice_is_a_finding():
    v = execute(_case(1), "test:bad_page", "torch", ["eager"])
    assert v.failed
    f = v.failures[0]
    assert (f.check, f.slot_class) == ("invariants", "allocation")
    assert "observed allocation rejected" in f.message and "was not free" in f.message


@pytest.mark.parametrize("mutate,needle", [
    (lambda a: a[0].__setitem__(0, [0, a[0][0][1]]), "page 0 is the dummy page"),
    (lambda a: a[0].__setitem__(1, [a[0][1][0], a[0][0][1]]), "SWA page"),
    (lambda a: a[0].pop(), "reported no further allocated token"),
    (lambda a: a[0].append([40, 40]), "the step does not allocate"),
    (lambda a: a[0].__setitem__(0, "x"), "is not a [full, swa] pair"),
])
def test_rejections_name_the_problem(mutate, needle):
    case = _case(1)
    alloc = _observed(case)
    mutate(alloc)
    with pytest.raises(AllocationRejected, match="steps\\[0\\]") as ei:
        expect(case, observed_alloc=alloc)
    assert needle in str(ei.value)


def test_continuation_must_follow_the_last_page():
    case = _case(2)
    alloc = _observed(case)
    full, swa = alloc[0][1]  # position 1 continues position 0's page
    alloc[0][1] = [full, swa + 1]
    with pytest.raises(AllocationRejected, match="continues its last page"):
        expect(case, observed_alloc=alloc)


def test_not_offset_zero_is_rejected():
    case = _case(2)
    alloc = _observed(case)
    alloc[0][0] = [alloc[0][0][0] + 1, alloc[0][0][1]]
    with pytest.raises(AllocationRejected, match="not at offset 0"):
        expect(case, observed_alloc=alloc)
