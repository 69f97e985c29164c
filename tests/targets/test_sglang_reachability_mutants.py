"""Each check of tests/targets/test_sglang_reachability.py fails on a mutant: a guard of the
release switched off (its page-size override, its pplx padding rule), the later release that
lifted a guard (0.5.23 for the 0.5.21/0.5.22 window refusal), or a wrong ledger record (server
arguments the release refuses, or that do not give the value the answer relies on). Marker
``upstream``; each runs where the release it mutates is installed.

Sources: the entries' notes and server answers (ledger/known_failures.json), the addendum's
§1 (enablement) and §4 (DP padding) of the 0.5.23 spec.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None,
    reason="sglang is not installed (build an environment with scripts/upstream-env VERSION)")]



@pytest.fixture
def rt(monkeypatch, request):
    """The reachability tests' module, with ``mutate(eid, release_ok, **args)``: the entry's
    server arguments changed (None removes one) and, with ``release_ok``, its release list
    ignored (a guard checked on a release the entry does not list)."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    import test_sglang_reachability as mod

    from swafuzz.targets.sglang.serverargs import forget_verdicts
    forget_verdicts()                 # verdicts of the unmutated release are not reused
    request.addfinalizer(forget_verdicts)  # nor the mutant's afterwards

    def mutate(eid, release_ok=False, **changes):
        e = mod.ENTRIES[eid]
        args = {k: v for k, v in {**e.server.server_args, **changes}.items() if v is not None}
        new = dataclasses.replace(e, server=dataclasses.replace(e.server, server_args=args))
        monkeypatch.setitem(mod.ENTRIES, eid, new)
        if release_ok:
            monkeypatch.setattr(mod, "entry", lambda i: mod.ENTRIES[i])
    mod.mutate = mutate
    return mod


def _installed():
    from swafuzz.targets.sglang import installed_version
    return installed_version()


def test_page_override_switched_off_fails_the_page_check(rt, monkeypatch):
    if _installed() != "0.5.23":
        pytest.skip("mutates 0.5.23's model override registry")
    from sglang.srt.arg_groups import model_override_base as base
    importlib.import_module("sglang.srt.arg_groups.model_overrides.deepseek_v4")  # registers
    fns = base._MODEL_OVERRIDE_FNS["DeepseekV4ForCausalLM"]

    def without_page(fn):
        return lambda *a, **k: {x: y for x, y in fn(*a, **k).items() if x != "page_size"}
    monkeypatch.setitem(base._MODEL_OVERRIDE_FNS, "DeepseekV4ForCausalLM",
                        [without_page(f) for f in fns])
    with pytest.raises(AssertionError):
        rt.test_dsv4_page_size_is_forced("ring-p1-alloc-writes-mapping")


def test_the_release_that_lifted_the_window_guard_fails_it(rt):
    if _installed() != "0.5.23":
        pytest.skip("0.5.23 is the release that accepts the window with DP attention")
    rt.mutate("a2-window-before-idle", release_ok=True)
    with pytest.raises(AssertionError):
        rt.test_window_refuses_dp_attention_before_0_5_23("a2-window-before-idle")


def test_wrong_records_fail_their_checks(rt):
    v = _installed()
    if v == "0.5.22":
        rt.mutate("short-tail-floor", dp_size=2, tp_size=2, enable_dp_attention=True)
        with pytest.raises(AssertionError):
            rt.test_tail_with_window_is_accepted()
        rt.mutate("a2-window-before-idle", enable_dp_attention=None, dp_size=None)
        with pytest.raises(AssertionError):
            rt.test_window_refuses_dp_attention_before_0_5_23("a2-window-before-idle")
        rt.mutate("short-tail-floor", dp_size=None, tp_size=None, enable_dp_attention=None,
                  chunked_prefill_size=512)  # not the bundle's arguments
        with pytest.raises(AssertionError):
            rt.test_short_tail_bundle_reproduces(None)
    elif v == "0.5.23":
        rt.mutate("ring-a4-resolver-fallback-dp-eager", enable_dp_lm_head=None)
        with pytest.raises(AssertionError):
            rt.test_ring_with_dp_attention_is_accepted()
        rt.mutate("ring-a4-draft-extend-graph", speculative_algorithm=None,
                  speculative_eagle_topk=None, speculative_num_steps=None,
                  speculative_num_draft_tokens=None)
        with pytest.raises(AssertionError):
            rt.test_ring_has_no_draft_extend_on_cuda()
        rt.mutate("window-dp-extend-pad-joins-run", tp_size=1)       # attention TP 1
        with pytest.raises(AssertionError):
            rt.test_window_with_attention_tp_is_accepted()
        # left unset, the release resolves the late-layer tail on for pure TP 2
        rt.mutate("window-dp-extend-pad-joins-run", tp_size=2,
                  enable_decoder_swa_bounded_replay=None)
        with pytest.raises(AssertionError):
            rt.test_window_with_attention_tp_is_accepted()
        with pytest.raises(AssertionError):  # no longer the bundle's arguments
            rt.test_window_pad_bundle_reproduces(None)
    else:
        pytest.skip(f"no entry lists sglang {v}")


def test_padding_rule_without_its_pplx_arm_fails_the_pplx_check(rt, monkeypatch):
    if _installed() != "0.5.23":
        pytest.skip("the entry lists 0.5.23")
    from sglang.srt.layers.moe.utils import MoeA2ABackend
    monkeypatch.setattr(MoeA2ABackend, "is_pplx", lambda self: False)
    with pytest.raises(AssertionError):
        rt.test_pplx_forces_max_len_with_the_window()
