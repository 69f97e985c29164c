"""A search the harness ends (examples spent, out of time, a cap) saves nothing to the example
database: Hypothesis takes the harness's own exception for a failure and would save the Case
that ran past the budget, which ``--resume`` then replays first (its reuse phase), shifting
every later draw of the unit (seen as ``test_kill_9_then_resume_loses_and_duplicates_nothing``
failing when the kill landed after a unit spent its examples)."""

from __future__ import annotations

from hypothesis.database import InMemoryExampleDatabase

from swafuzz.harness.pipeline.hypothesis_env import HarnessStops


def test_saves_are_dropped_once_the_harness_stops():
    inner = InMemoryExampleDatabase()
    db = HarnessStops(inner)
    db.save(b"k", b"a")
    db.stopping = True
    db.save(b"k", b"b")
    db.move(b"k", b"j", b"a")
    assert list(inner.fetch(b"k")) == [b"a"] and not list(inner.fetch(b"j"))
    assert list(db.fetch(b"k")) == [b"a"]

