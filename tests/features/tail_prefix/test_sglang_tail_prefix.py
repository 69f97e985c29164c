"""Issue 12 on the ``sglang`` target: prefix hits under a late-layer tail, fold and separate
encoder replay and compressor locations through SGLang 0.5.23's own code
(features/request_window/tail_prefix/sglang.py): the hand-made Cases of tests/features/tail_prefix/test_tail_prefix.py and
both new kinds pass every check, and each real piece the TABLE names runs; the release's
pieces give what the contract says on direct calls. Marker ``upstream``: skipped without
sglang; the 0.5.23 tests skip on 0.5.12, whose adapter refuses such Cases.
Reproduce: ``$(scripts/upstream-env 0.5.23) -m pytest tests/features/tail_prefix/test_sglang_tail_prefix.py``
(``TRITON_INTERPRET=1`` runs the c4 metadata kernel on CPU).
"""

from __future__ import annotations

import collections
import importlib.util
import os

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute
from tests.features.tail_prefix.test_tail_prefix import HAND, TP_WINDOW  # noqa: E402

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]


def _need_0_5_23():
    from swafuzz.targets import sglang as sg

    if sg.release()[1] != "0.5.23":
        pytest.skip("encoder replay and the late-layer tail exist from 0.5.21; adapter 0.5.23")


@pytest.mark.parametrize("name", sorted(HAND))
def test_real_code_passes_hand_cases(name):
    _need_0_5_23()
    v = execute(HAND[name], "sglang", "torch", ["eager", "tape"])
    assert not v.failures, [f.message for f in v.failures]


@pytest.mark.parametrize("kind", ["tail_prefix", "replay_separate"])
def test_real_code_agrees_with_the_oracle_on_each_kind(kind):
    _need_0_5_23()

    @settings(max_examples=8, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failures, [f.message for f in v.failures]

    prop()


def test_the_release_pieces_run(monkeypatch):
    """Every piece the TABLE calls real is called while the hand Cases run."""
    _need_0_5_23()
    from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend
    from sglang.srt.mem_cache import common
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
    from sglang.srt.model_executor import encoder_swa_replay as esr

    calls = collections.Counter()

    def spy(owner, name, static=False):
        real = getattr(owner, name)

        def f(*a, **k):
            calls[name] += 1
            return real(*a, **k)

        monkeypatch.setattr(owner, name, staticmethod(f) if static else f)

    for n in ("_fold_batch", "_build_replay_batch", "_reset_windows_and_collect_hits"):
        spy(esr, n)
    spy(common, "_req_radix_key")
    spy(UnifiedRadixCache, "swa_reprefill_tail_tokens")
    spy(DeepseekV4AttnBackend, "_compressor_out_loc", static=True)
    for case in HAND.values():
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failures, [f.message for f in v.failures]
    assert all(calls[n] for n in ("_fold_batch", "_build_replay_batch",
                                  "_reset_windows_and_collect_hits", "_req_radix_key",
                                  "swa_reprefill_tail_tokens", "_compressor_out_loc")), calls


def test_release_compressor_pieces_on_direct_calls():
    """``_compressor_out_loc`` zeroes the rows outside ``encoder_swa_compress_rows``; the c4
    output of ``init_compression_metadata`` (interpreter) is ``loc // 4`` on rows completing
    a group of 4, else 0; the radix key limit is ``length - W`` under a tail, none without."""
    _need_0_5_23()
    import torch

    from swafuzz.features.request_window.tail_prefix.sglang import SGLangTailPrefixPath as P

    loc = torch.tensor([11, 12, 13, 14, 15], dtype=torch.int64)
    assert P.compressor_loc(loc, torch.tensor([2, 3, 4])).tolist() == [0, 0, 13, 14, 15]
    assert P.compressor_loc(loc, None) is loc
    if os.environ.get("TRITON_INTERPRET") == "1":
        pos = torch.arange(3, 8)
        assert P.c4_loc(loc, pos).tolist() == [11 // 4, 0, 0, 0, 15 // 4]

    path = object.__new__(P)
    path.W, path.P, path.L = 4, 2, 1
    assert path.prefix_hit(10, 12) == 8 and path.prefix_hit(4, 5) == 0
    path.L = 0
    assert path.prefix_hit(10, 12) == 10


def test_0_5_12_refuses_the_new_kinds(capsys, tmp_path):
    from swafuzz.targets import TargetUnavailable, run_case
    from swafuzz.targets import sglang as sg

    if sg.release()[1] != "0.5.12":
        pytest.skip("adapter 0.5.12 only")
    with pytest.raises(TargetUnavailable, match="0.5.21"):
        run_case(TP_WINDOW, target="sglang", impl="torch")
    from swafuzz.harness.cli.commands import main as cli_main

    for kind, what in (("tail_prefix", "late-layer tail"),
                       ("replay_separate", "encoder SWA replay batch builder")):
        rc = cli_main(["run", "--target", "sglang", "--scenario", kind, "--examples", "1",
                       "--out", str(tmp_path / kind), "--quiet"])
        assert rc == 2 and f"has no {what}" in capsys.readouterr().err
