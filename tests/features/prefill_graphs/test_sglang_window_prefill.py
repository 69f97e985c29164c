"""Issue 12 on the ``sglang`` target: breakable prefill graphs under a request window driven
through SGLang 0.5.23's ``expand_prefill_causally``, ``window_layout(..., padded_rows=)`` and
``DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_`` (features/request_window/prefill_graphs/sglang.py)
pass every check on the hand Case and on the ``prefill_graphs`` kind under the tape executor,
and that code is what runs (the release's refresh and ``WindowLayout.copy_`` are called once per
replay); 0.5.12 (no prefill graphs with a window) refuses the kind. Marker ``upstream``: skipped
without sglang; the release-specific tests skip on the other release.
Reproduce: ``$(scripts/upstream-env 0.5.23) -m pytest
tests/features/prefill_graphs/test_sglang_window_prefill.py`` (and with the 0.5.12 venv).
"""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from tests.features.prefill_graphs.test_window_prefill import HAND  # noqa: E402

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]


def _adapter() -> str:
    from swafuzz.targets import sglang as sg

    return sg.release()[1]


def test_table_row_and_first_release():
    from swafuzz import features
    from swafuzz.targets import sglang as sg
    from swafuzz.targets.sglang.target import TARGET

    since = features.feature_of_kind("prefill_graphs").since_for("sglang", "prefill_graphs")
    assert since.release == "0.5.23"
    assert any(r[0].startswith("breakable prefill graphs under a request window")
               for r in sg.TABLE)
    # the installed release's answer is the records' for that release (any release of the
    # range, post-releases included: refused before 0.5.23, run from it)
    first = sg.version_key(since.release)
    if sg.version_key(_adapter()) < first:
        assert "first in 0.5.23" in TARGET.supports("prefill_graphs")
    else:
        assert TARGET.supports("prefill_graphs") is None


@pytest.mark.parametrize("executors", [["eager"], ["tape"], ["eager", "tape"]])
def test_real_code_passes_the_hand_case(executors):
    if _adapter() != "0.5.23":
        pytest.skip("adapter 0.5.23 only")
    v = execute(HAND, "sglang", "torch", executors)
    assert not v.failures, [f.message for f in v.failures]


def test_real_code_on_the_kind():
    if _adapter() != "0.5.23":
        pytest.skip("adapter 0.5.23 only")

    @settings(max_examples=8, database=None, deadline=None)
    @given(features.strategy("prefill_graphs")())
    def prop(case):
        v = execute(case, "sglang", "torch", ["tape"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_real_refresh_and_layout_are_what_runs(monkeypatch):
    if _adapter() != "0.5.23":
        pytest.skip("adapter 0.5.23 only")
    from sglang.kernels.ops.attention.dsv4 import attn_metadata_kernels as amk
    from sglang.srt.layers.attention import deepseek_v4_backend as be
    from sglang.srt.mem_cache import dsv41_request_window as rw

    from swafuzz.features.request_window import sglang as sw
    from swafuzz.harness.executors import get_executor
    from swafuzz.targets import run_case

    calls = {"refresh": 0, "copy_": 0, "layout": [], "expand": 0}
    real_refresh = be.DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_
    real_copy = rw.WindowLayout.copy_
    real_layout = sw.real_window_layout
    real_expand = amk.expand_prefill_causally

    def refresh(self, other):
        calls["refresh"] += 1
        return real_refresh(self, other)

    def copy_(self, other):
        calls["copy_"] += 1
        return real_copy(self, other)

    def layout(req, pos, **kw):
        calls["layout"].append(kw.get("padded_rows"))
        return real_layout(req, pos, **kw)

    def expand(**kw):
        calls["expand"] += 1
        return real_expand(**kw)

    monkeypatch.setattr(be.DSV4AttnMetadata, "refresh_for_breakable_cuda_graph_replay_", refresh)
    monkeypatch.setattr(rw.WindowLayout, "copy_", copy_)
    monkeypatch.setattr(sw, "real_window_layout", layout)
    monkeypatch.setattr(amk, "expand_prefill_causally", expand)
    import swafuzz.features.request_window.prefill_graphs.sglang as swp

    monkeypatch.setattr(swp, "real_window_layout", layout)
    obs = run_case(HAND, target="sglang", impl="torch", executor=get_executor("tape"))
    assert obs.error is None, obs.error
    graph = [f for f in obs.channel("request_window").forwards if f.bucket is not None]
    assert len(graph) == 7
    assert calls["refresh"] == calls["copy_"] == 7  # one in-place refresh per replay
    # per replay one live layout and per capture one capture layout, all padded to the bucket
    assert calls["expand"] == 7 + 2 and calls["layout"].count(8) + calls["layout"].count(4) == 9
