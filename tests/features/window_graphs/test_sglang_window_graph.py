"""Issue 12: DECODE graphs under a request window on the ``sglang`` target (0.5.23's decode
bucket: registry padding, Raw metadata, in-graph upgrade, resolver W, RequestWindow).

What: the hand Case of ``test_window_graph.py`` and the ``window_graphs`` kind (outside the
ledger's A5 trigger) match the oracle bit for bit on 0.5.23 under eager + tape; the release's
objects are the ones in use (Raw metadata per bucket, ``WindowLayout`` built in the graph, the
registry's padding, the IDLE substitution); the ledger entry
``window-a5-mtp-idle-after-graph-replay`` replays, is precise (no topk or two layers: clean;
unified: clean), and the eager init's ``_activate_request_window`` is what keeps an eager
IDLE without MTP clean. 0.5.12: see ``test_window_graph.py`` (refusal).
Reproduce: ``$(scripts/upstream-env 0.5.23) -m pytest -q
tests/features/window_graphs/test_sglang_window_graph.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EX = ["eager", "tape"]


def _adapter() -> str | None:
    try:
        import sglang  # noqa: F401
    except ImportError:
        return None
    from swafuzz.targets import TargetUnavailable
    from swafuzz.targets.sglang import release

    try:
        return release()[1]
    except TargetUnavailable:
        return None


# run by scripts/upstream-check (marker upstream) in the release's environment
pytestmark = [pytest.mark.upstream,
              pytest.mark.skipif(_adapter() != "0.5.23",
                                 reason="the decode bucket under a window needs sglang 0.5.23")]

POOL = PoolConfig(page_size=1, full_pages=40, swa_pages=40, window=4, layers=1,
                  request_window=6, window_slots=3, window_chunk=12)
#: test_window_graph.GRAPHS (decodes of 3, 2, 1 rows in buckets 2 / 4, eager and graph IDLEs,
#: a finish, a graph DP rank without requests)
GRAPHS = Case(pool=POOL, graph=GraphConfig(buckets=(2, 4)),
              steps=(Step("admit", rid=0, length=5), Step("admit", rid=1, length=6),
                     Step("admit", rid=2, length=3),
                     Step("decode", rids=(0, 1, 2), exec="graph"), Step("idle", tokens=2),
                     Step("decode", rids=(0, 1), exec="graph"), Step("idle", tokens=2),
                     Step("decode", rids=(2, 1), exec="graph"), Step("idle", tokens=2),
                     Step("idle", tokens=3, exec="graph"),
                     Step("decode", rids=(0,), exec="graph"),
                     Step("finish", rid=0), Step("dp_decode", rank_tokens=(2,), exec="graph"),
                     Step("decode", rids=(1,))),
              payload_seed=3, kind="window_graphs")
#: a DP rank with one request padded to the bucket by max(rank_tokens): the registry pads it
DP = Case(pool=POOL, graph=GraphConfig(buckets=(1, 2, 4)),
          steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,), exec="graph"),
                 Step("dp_decode", rids=(0,), rank_tokens=(3,), exec="graph"),
                 Step("decode", rids=(0,), exec="graph")),
          payload_seed=5, kind="window_graphs")


def _engine(case):
    from swafuzz.harness.executors import get_executor
    from swafuzz.targets.sglang.engine import SGLangEngine

    e = SGLangEngine(case, impl="torch", executor=get_executor("tape"))
    obs = e.run()
    assert obs.error is None, obs.error
    return e, obs


@pytest.mark.parametrize("case", [GRAPHS, DP], ids=["hand", "dp"])
def test_hand_cases_match_the_oracle(case):
    v = execute(case, "sglang", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


def test_the_release_objects_are_in_use():
    from sglang.srt.layers.attention import deepseek_v4_backend as B
    from sglang.srt.mem_cache import dsv41_request_window as rw

    from swafuzz.features.request_window.window_graphs.sglang import SGLangWindowGraphRunner

    e, obs = _engine(GRAPHS)
    g = e.step_path.graph
    assert type(g) is SGLangWindowGraphRunner
    decode = g.bk.cuda_graph_metadata_of_bucket_and_bs[B._GraphBucket.DECODE_OR_IDLE]
    assert sorted(decode) == [2, 4] == sorted(g.handles)
    assert all(type(m) is B.DSV4RawDecodeMetadata for m in decode.values())
    # the captured Raw metadata reads the registry's buffers (copy_ refreshes them in place)
    assert decode[4].req_pool_indices.data_ptr() == g.static_req.data_ptr()
    assert all(type(lay) is rw.WindowLayout for lay in g.layouts.values())
    assert {b: g.layouts[b].size for b in g.layouts} == {2: 2 * 4 + 2, 4: 4 * 4 + 4}
    graph_fwds = [f for f in obs.channel("request_window").forwards if f.bucket is not None]
    assert len(graph_fwds) == 6
    # last graph forward: a DP rank without requests (IDLE) in bucket 2: the release's IDLE
    # substitution left every row slot 0, seq 1
    assert graph_fwds[-1].mode == "IDLE" and graph_fwds[-1].bucket == 2
    assert g.static_req[:2].tolist() == [0, 0] and g.static_seq[:2].tolist() == [1, 1]


def test_registry_pads_a_dp_rank():
    e, obs = _engine(DP)
    g = e.step_path.graph
    f = [x for x in obs.channel("request_window").forwards if x.step == 2][0]
    assert f.bucket == 4 and f.stores[0].locs == [16, 17, 18, 19]
    # after the step-3 replay (bucket 1) the bucket-4 rows past the request keep step 2's
    # padding: ZERO for req, seq_lens fill 1
    assert g.static_req[1:4].tolist() == [0, 0, 0] and g.static_seq[1:4].tolist() == [1, 1, 1]


@settings(max_examples=12, database=None, deadline=None)
@given(features.strategy("window_graphs")())
def test_kind_matches_the_oracle_outside_the_a5_trigger(case):
    assume(not (case.pool.layers == 1 and case.graph.topk >= 1))
    v = execute(case, "sglang", "torch", EX)
    assert not v.failures, [f.message for f in v.failures]


def _a5():
    from swafuzz.reports.bundle import read_bundle

    with open(os.path.join(ROOT, "ledger", "known_failures.json")) as f:
        e = next(x for x in json.load(f)["entries"]
                 if x["id"] == "window-a5-mtp-idle-after-graph-replay")
    b = read_bundle(os.path.join(ROOT, e["repro"]))
    return e, b, Case.from_json(b["case"])


def test_ledger_a5_replays_and_is_precise():
    e, b, case = _a5()
    v = execute(case, "sglang", "torch", EX)
    assert v.failed and v.signature() == b["signature"]
    assert all(f.check == "window" and "IDLE" in f.message and "history row" in f.message
               for f in v.failures), [f.message for f in v.failures]
    assert not execute(case, "unified", "torch", EX).failed
    no_mtp = dataclasses.replace(case, graph=dataclasses.replace(case.graph, topk=0))
    two = dataclasses.replace(case, pool=dataclasses.replace(case.pool, layers=2))
    for c in (no_mtp, two):
        assert not execute(c, "sglang", "torch", EX).failed
    from swafuzz.harness.ledger.when import parse_when

    w = parse_when(e["when"], "when")
    assert w.holds(case, "0.5.23", ("tape",))
    assert not w.holds(no_mtp, "0.5.23", ("tape",)) and not w.holds(two, "0.5.23", ("tape",))


def test_eager_init_activation_keeps_idle_without_mtp_clean(monkeypatch):
    """Without the release's ``_activate_request_window`` at the end of the eager init, an eager
    IDLE (no MTP) after a DECODE replay would re-activate the cached idle layout and skip its
    history copy like the A5 entry: the adapter's eager init must run it."""
    from swafuzz.targets.sglang.real import RealBackend

    _, _, case = _a5()
    no_mtp = dataclasses.replace(case, graph=dataclasses.replace(case.graph, topk=0))
    monkeypatch.setattr(RealBackend, "_activate_request_window", lambda self: None)
    v = execute(no_mtp, "sglang", "torch", EX)
    assert v.failed and v.signature() == "window/window_graphs/workspace"


@settings(max_examples=30, database=None, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), st.data())
def test_dense_commit_equals_the_masked_one_on_decode_buckets(cap, W, B, data):
    """The mask-free in-graph commit (a seam) leaves the masked commit's ring rows (slots >= 1)
    and tags (all) on decode-bucket layouts: ``b <= B`` distinct slots >= 1, any positions, then
    ``B - b`` padding rows of slot 0, position 0 (``window_layout`` of 0.5.23, one group per
    row). Shrinks towards one row, capacity 1."""
    import torch

    from swafuzz.features.request_window.sglang import _commit_packed_rows, real_window_layout
    from swafuzz.features.request_window.window_graphs.sglang import _commit_packed_rows_dense

    S = 4
    b = data.draw(st.integers(0, B))
    slots = data.draw(st.permutations(range(1, S + 1)))[:b]
    pos = [data.draw(st.integers(0, 9)) for _ in slots]
    req = torch.tensor(list(slots) + [0] * (B - b))
    p = torch.tensor(pos + [0] * (B - b))
    lay = real_window_layout(req, p, zero_row=(S + 1) * cap, window=W, capacity=cap)
    ws = torch.arange(lay.size, dtype=torch.int64).view(-1, 1, 1).to(torch.uint8) + 1
    out = []
    for fn in (_commit_packed_rows, _commit_packed_rows_dense):
        state = torch.zeros((S + 1) * cap, 1, 1, dtype=torch.uint8)
        tags = torch.full(((S + 1) * cap,), -1, dtype=torch.int64)
        fn(ws, state, tags, lay, page_size=1, capacity=cap)
        out.append((state.flatten()[cap:].tolist(), tags.tolist()))
    assert out[0] == out[1]
