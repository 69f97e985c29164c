"""Per-feature channels (issue 17): ``Observation``, ``StepObs`` and ``Expectation`` carry
feature name -> that feature's data, which the features fill and read; the core types name no
feature field.

What: a window Case's observation and expectation hold the ``request_window`` channel (the
path's forwards and one entry per step; the window oracle's expectation), a ring Case's steps
the ``ring`` channel, a plain Case none; an absent channel reads as the feature's empty data
(or None); the paged late-layer tail's writes reach ``Expectation.pool_writes``.
Reproduce: ``pytest tests/features/test_channels.py``.
"""

from __future__ import annotations

import dataclasses

from swafuzz.features.request_window import channel as window
from swafuzz.features.ring import channel as ring
from swafuzz.oracles.engine import expect
from swafuzz.oracles.expectation import Expectation
from swafuzz.scenarios.case import Case, PoolConfig, Step
from swafuzz.targets import run_case
from swafuzz.targets.observation import Observation, StepObs


def _pool(**kw):
    base = dict(page_size=1, full_pages=40, swa_pages=40, window=4, layers=1)
    base.update(kw)
    return PoolConfig(**base)


WINDOW = Case(pool=_pool(request_window=6, window_slots=2, window_chunk=6, layers=2),
              steps=(Step("admit", rid=0, length=5), Step("decode", rids=(0,))),
              payload_seed=3, kind="request_window")
TAIL_PAGED = Case(pool=_pool(page_size=2, layers=3, late_layer_start=1),
                  steps=(Step("admit", rid=0, length=7), Step("decode", rids=(0,))),
                  payload_seed=4, kind="late_tail")
RING = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=1, window=3, swa_ring=4,
                            req_slots=1), steps=(Step("admit", rid=0, length=4),), kind="ring")
PLAIN = Case(pool=_pool(), steps=(Step("admit", rid=0, length=5), Step("decode", rids=(0,))))


def test_the_core_types_name_no_feature_field():
    for cls in (Observation, StepObs, Expectation):
        names = {f.name for f in dataclasses.fields(cls)}
        assert "channels" in names
        assert not names & {"window", "window_forwards", "window_steps", "ring"}, cls


def test_window_path_fills_its_channel():
    obs = run_case(WINDOW, target="unified", impl="torch")
    assert obs.error is None and set(obs.channels) == {window.CHANNEL}
    got = window.observed(obs)
    assert [(f.step, f.fwd) for f in got.forwards] == [(0, 0), (1, 0)]
    assert [s.step for s in got.steps] == [0, 1]
    exp = expect(WINDOW)
    assert window.expected(exp) is exp.channel(window.CHANNEL) is not None
    assert [(e.step, e.fwd) for e in window.expected(exp).forwards] == [(0, 0), (1, 0)]


def test_absent_channels_read_empty():
    obs = run_case(PLAIN, target="unified", impl="torch")
    assert obs.error is None and obs.channels == {}
    assert all(s.channels == {} and ring.state(s) is None for s in obs.steps)
    assert window.observed(obs) == window.WindowChannel() and obs.channels == {}
    assert obs.channel(window.CHANNEL) is None
    exp = expect(PLAIN)
    assert exp.channels == {} and window.expected(exp) is None and exp.pool_writes() == []
    assert window.expected(None) is None


def test_ring_allocator_fills_the_ring_channel_of_every_step():
    obs = run_case(RING, target="unified", impl="torch")
    assert obs.error is None and obs.channels == {}
    assert [set(s.channels) for s in obs.steps] == [{ring.CHANNEL}]
    assert ring.state(obs.steps[0])["slots"] == {0: 1}
    assert ring.observed_states([s.channels for s in obs.steps]) == [ring.state(obs.steps[0])]
    assert ring.observed_states(None) is None


def test_paged_tail_writes_reach_pool_writes():
    exp = expect(TAIL_PAGED)
    w = window.expected(exp)
    paged = [(e.step, "target", [t for lc in e.locs for t in lc]) for e in w.forwards if e.paged]
    assert paged and exp.pool_writes() == paged
