"""Error findings keep their identity (issue 19, item 5): an exception raised inside the code
under test is recorded with where it was raised and its message, and shrinking stops at the
smallest Case that fails the same way."""

import inspect

from support.cases import TWO_GRAPH_DECODES

from swafuzz.checks.base import Failure
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.execute import Verdict, execute
from swafuzz.targets import register
from swafuzz.targets.engine import UnifiedEngine

CASE = TWO_GRAPH_DECODES


class BareAssertEngine(UnifiedEngine):
    """Code under test with a bare ``assert`` on its second decode."""

    def step_decode(self, i, s):
        if i >= 2:  # a bare ``assert i < 2`` (written out: pytest rewrites asserts in tests)
            raise AssertionError
        return super().step_decode(i, s)


def test_an_exception_in_the_code_under_test_is_recorded_with_where_it_was_raised():
    register("test:bare_assert", BareAssertEngine)
    v = execute(CASE, "test:bare_assert", "torch", ["eager"])
    line = inspect.getsourcelines(BareAssertEngine.step_decode)[1] + 2
    where = f"{__name__}.step_decode:{line}"
    assert [f.check for f in v.failures] == ["error"], v.failures
    f = v.failures[0]
    assert f.where == where and f.slot_class == "AssertionError" and f.step == 2
    assert f.message == f"[eager] step 2: AssertionError raised at {where}: (no message)"
    assert v.identity() == f"error/decode/AssertionError@{where}"
    assert v.to_json()["failures"][0]["where"] == where  # kept in the bundle and the log


def test_shrinking_stops_at_the_smallest_case_that_fails_the_same_way():
    """The first failing Case breaks a named rule (raised at one place); Cases smaller than it
    fail with a bare AssertionError raised elsewhere - the same signature. The finding must be
    a Case failing the first way, not the bare one."""
    seen: list[int] = []
    rule = "host.engine.check_rule:10"
    bare = "host.engine.helper:20"

    def run_case(case):
        n = len(case.steps)
        if n >= 4:
            seen.append(n)
            f = Failure("error", f"step 0: AssertionError raised at {rule}: rule R broken by "
                        f"{n} steps", "AssertionError", 0, where=rule)
        elif seen and n >= 2:  # smaller than a failing Case: fails too, another way
            f = Failure("error", f"step 0: AssertionError raised at {bare}: (no message)",
                        "AssertionError", 0, where=bare)
        else:
            return Verdict(case, [], 1, 0.0)
        return Verdict(case, [f], 1, 0.0)

    res = Campaign(run_case, seed=0, database=None, shrink_budget=200).run_kind("episode", 100)
    assert res.finding is not None and seen
    f = res.finding.failures[0]
    assert f.where == rule and "rule R broken" in f.message, f
    assert len(res.finding.case.steps) == 4  # shrunk within the rule's failures
