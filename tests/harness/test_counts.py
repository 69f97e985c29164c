"""Counts are exact and tables true (issue 27 item 5): ``--examples N`` generates exactly N
Cases or says why it could not; an interrupted run's table counts every finished unit and the
cases of the unfinished ones; progress lines come from inside a unit; Hypothesis's own messages
become notes in the run's words, and its wall-clock shrink cap is lifted."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine as hypothesis_engine
from hypothesis.reporting import report

from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.caselog import (
    CaseLog,
    examples_note,
    per_kind,
    read_log,
    unit_rows,
)
from swafuzz.harness.pipeline.driver import _Ticker
from swafuzz.harness.pipeline.execute import Verdict
from swafuzz.harness.pipeline.hypothesis_env import hypothesis_in_our_words


@dataclass(frozen=True)
class _Case:
    """A stand-in Case: only its key matters to the campaign."""

    n: int
    kind: str = "toy"

    def dumps(self) -> str:
        return str(self.n)


def _campaign(values: int, ran: list) -> Campaign:
    def run_case(case):
        ran.append(case.n)
        return Verdict(case, checks_run=1)

    return Campaign(run_case, seed=3, strategy=lambda kind: st.integers(0, values - 1).map(_Case),
                    size=lambda c: (c.n,))


def test_examples_are_exact_though_hypothesis_draws_repeats():
    # 40 distinct Cases; asking 35 makes Hypothesis's draws repeat (a repeat is answered from
    # the memo, not generated): further rounds draw the rest, and no Case runs twice
    ran: list[int] = []
    res = _campaign(40, ran).run_kind("toy", 35)
    assert res.generated == 35 and len(ran) == 35 and len(set(ran)) == 35
    assert res.short is None and res.finding is None


def test_a_kind_with_too_few_cases_says_why():
    ran: list[int] = []
    res = _campaign(12, ran).run_kind("toy", 30)
    assert res.generated == 12 and sorted(ran) == list(range(12))
    assert res.short and "no further distinct valid Case of kind toy" in res.short
    assert "12 of 30" in res.short
    rows = [{"unit": "toy.0", "kind": "toy", "generated": 12, "short": res.short}]
    note = examples_note(30, rows, 12)
    assert note.startswith("examples: 12 of 30 Cases generated: ") and res.short in note
    assert examples_note(30, rows, 30) is None and examples_note(None, rows, 12) is None


def test_interrupted_table_counts_finished_and_unfinished_units(tmp_path):
    path = tmp_path / "cases.jsonl"
    log = CaseLog(str(path))
    for _ in range(3):  # a finished unit: its own row wins over its case rows
        log.write({"unit": "idle.0", "kind": "idle", "phase": "generate", "checks": 2,
                   "forward_steps": 1, "seconds": 0.1, "case": {}})
    log.write({"unit": "idle.0", "event": "unit_done", "kind": "idle", "cases": 3,
               "generated": 3, "shrunk": 0, "replayed": 0, "checks": 6, "seconds": 0.3,
               "finding": None})
    for phase in ("generate", "generate", "shrink"):  # an unfinished unit: its case rows
        log.write({"unit": "decode.0", "kind": "decode", "phase": phase, "checks": 5,
                   "forward_steps": 2, "seconds": 0.2, "case": {}})
    log.close()
    rows = unit_rows(read_log(str(path)))
    by = {r["unit"]: r for r in rows}
    assert set(by) == {"idle.0", "decode.0"} and by["decode.0"]["partial"]
    assert (by["decode.0"]["generated"], by["decode.0"]["shrunk"], by["decode.0"]["checks"]) \
        == (2, 1, 15)
    stats = per_kind(rows)
    assert sum(s["cases"] for s in stats.values()) == 6
    assert stats["decode"]["generated"] == 2 and stats["idle"]["generated"] == 3
    # a row this process holds that the log lacks (a fleet's) is kept too
    extra = {"unit": "ring.0", "event": "unit_done", "kind": "ring", "generated": 4}
    assert "ring.0" in {r["unit"] for r in unit_rows(read_log(str(path)), [extra])}


def test_progress_lines_come_from_inside_a_unit(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("")
    said = threading.Event()
    lines: list[str] = []

    def say(msg):
        lines.append(msg)
        if msg.startswith("progress:"):
            said.set()

    ticker = _Ticker(str(path), say, every=0.05, units=1)
    try:  # nobody calls tick(): the ticker's own thread does, as during a long unit
        assert said.wait(120), lines
    finally:
        ticker.stop()
    assert lines[0].startswith("progress: 0 cases run, 0/1 units done")


def test_hypothesis_messages_become_notes_and_nothing_is_printed(capsys):
    notes: list[str] = []
    had = hypothesis_engine.MAX_SHRINKING_SECONDS
    with hypothesis_in_our_words(notes, "decode"):
        assert hypothesis_engine.MAX_SHRINKING_SECONDS > 10**6  # shrinking: counted, not timed
        report("WARNING: Hypothesis has spent more than five minutes working to shrink a "
               "failing test case, and stopped because it is making very slow progress.\n\n"
               "PLEASE REPORT THIS if you can provide a reproducing example")
    assert hypothesis_engine.MAX_SHRINKING_SECONDS == had
    out = capsys.readouterr()
    assert "PLEASE REPORT" not in out.out + out.err
    assert len(notes) == 1 and notes[0].startswith("kind decode: Hypothesis stopped shrinking")
    assert "\n" not in notes[0] and "PLEASE REPORT" not in notes[0]


def test_a_flaky_search_with_no_failure_is_a_harness_error_in_our_words():
    # the strategy draws differently on a replay (Hypothesis's FlakyStrategyDefinition) while
    # nothing failed: exit 3 naming the kind in the run's words, not Hypothesis's traceback
    import pytest
    from hypothesis.errors import FlakyStrategyDefinition

    from swafuzz.machinery import HarnessError

    def wobbly(n):
        if n == 5:
            raise FlakyStrategyDefinition("Inconsistent data generation! (stand-in)")
        return _Case(n)

    camp = Campaign(lambda case: Verdict(case, checks_run=1), seed=3,
                    strategy=lambda kind: st.integers(0, 9).map(wobbly), size=lambda c: (c.n,))
    with pytest.raises(HarnessError) as e:
        camp.run_kind("toy", 10)
    msg = str(e.value)
    assert msg.startswith("kind toy: Hypothesis found the search inconsistent") and "\n" not in msg
    assert "FlakyStrategyDefinition" in msg and "not a finding" in msg
