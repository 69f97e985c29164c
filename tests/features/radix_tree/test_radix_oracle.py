"""The radix cache's server oracle on hand-built observations (plain Python, no SGLang): a
request reading a group's shared prefix through the tree passes; a row holding another prefix's
slot, a double free, a free under a reader, a leak and an unaligned hit are each caught by their
check; the Case's plan follows the observed hits; the ``server_radix`` draw."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from swafuzz.features.radix_tree.server_kind import radix_cases
from swafuzz.features.radix_tree.server_oracle import _Walk, judge
from swafuzz.features.radix_tree.server_rules import not_driven_with
from swafuzz.server.case import ServerConfig, parse
from swafuzz.server.observation import ForwardRec, ServerObs
from swafuzz.server.timeline import Forward, plan

CASE = {"config": {"page_size": 1, "disable_radix_cache": False},
        "model": {"layers": 1, "full_tokens": 64, "swa_tokens": 64, "sliding_window": 4},
        "requests": [{"prompt_len": 6, "max_new_tokens": 4, "prefix_group": 0, "prefix_len": 5},
                     {"arrive_step": 2, "prompt_len": 7, "max_new_tokens": 2, "prefix_group": 0,
                      "prefix_len": 5}]}
FREE = list(range(1, 65))
#: (mode, alloc, positions, seq_lens, window rows, every live request's row) per forward, as
#: 0.5.23 ran CASE (request 1 matched 5 tokens of request 0's published prompt)
RUN = (
    ("EXTEND", [1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5], [6], [[3, 4, 5, 6]],
     {0: [1, 2, 3, 4, 5, 6]}),
    ("DECODE", [7], [6], [7], [[4, 5, 6, 7]], {0: [1, 2, 3, 4, 5, 6, 7]}),
    ("EXTEND", [8, 9], [5, 6], [7], [[4, 5, 8, 9]],
     {0: [1, 2, 3, 4, 5, 6, 7, 0], 1: [1, 2, 3, 4, 5, 8, 9]}),
    ("DECODE", [10, 11], [7, 7], [8, 8], [[5, 6, 7, 10], [5, 8, 9, 11]],
     {0: [1, 2, 3, 4, 5, 6, 7, 10], 1: [1, 2, 3, 4, 5, 8, 9, 11]}),
    ("DECODE", [12], [8], [9], [[6, 7, 10, 12]], {0: [1, 2, 3, 4, 5, 6, 7, 10, 12]}),
)


def observed() -> ServerObs:
    obs = ServerObs(target_version="hand")
    mapping, held = [0] * 66, set()
    for i, (mode, alloc, pos, lens, win, rows) in enumerate(RUN):
        before = [s for s in FREE if s not in held]
        for s in alloc:
            mapping[s] = s
        held |= set(alloc)
        obs.forwards.append(ForwardRec(
            index=i, mode=mode, alloc=[[s, s] for s in alloc], stores=[list(alloc)],
            mapping=list(mapping), positions=pos, seq_lens=lens, window_rows=win))
        free = [s for s in FREE if s not in held]
        obs.tree.setdefault("forwards", {})[i] = {"rows": copy.deepcopy(rows), "full": free,
                                                  "swa": free,
                                                  "before": {"full": before, "swa": before}}
    obs.tree.update(hits={2: {1: 5}}, start={"full": FREE, "swa": FREE},
                    end={"full": FREE, "swa": FREE})
    return obs


def checks(obs) -> list[str]:
    return [f.check for f in judge(parse(CASE), obs, disabled=frozenset({"pool_bytes"}))]


def test_a_shared_prefix_read_through_the_tree_passes():
    assert checks(observed()) == []


def test_the_plan_starts_a_hit_request_at_its_hit():
    events = plan(parse(CASE), hits={2: {1: 5}})
    ext = [e for e in events if isinstance(e, Forward) and e.mode == "EXTEND"]
    assert [(e.rids, e.spans) for e in ext] == [((0,), ((0, 6),)), ((1,), ((5, 2),))]


def test_a_row_holding_another_prefix_is_a_prefix_read():
    obs = observed()
    obs.tree["forwards"][2]["rows"][1][1] = 3  # request 0's position 2, not position 1's KV
    assert checks(obs)[:1] == ["prefix_reads"]


def test_double_free_and_free_under_a_reader():
    obs = observed()
    obs.tree["forwards"][3]["full"] = obs.tree["forwards"][3]["full"] + [40]
    assert checks(obs) == ["tree_leak"]
    obs = observed()
    obs.tree["forwards"][3]["full"] = sorted(obs.tree["forwards"][3]["full"] + [2])
    assert checks(obs) == ["prefix_reads"]


def test_a_free_under_a_reader_before_the_allocation():
    obs = observed()
    obs.tree["forwards"][3]["before"]["full"] = sorted(obs.tree["forwards"][3]["before"]["full"]
                                                       + [8])
    assert checks(obs) == ["prefix_reads"]


def test_a_slot_not_back_after_the_run_is_a_leak():
    obs = copy.deepcopy(observed())
    obs.tree["end"] = {"full": [s for s in FREE if s != 7], "swa": FREE}
    assert checks(obs) == ["tree_leak"]
    obs.tree["end"] = {"full": FREE, "swa": FREE + [9]}
    assert checks(obs) == ["tree_leak"]


def test_a_hit_off_a_page_boundary():
    case = parse({**CASE, "config": {"page_size": 2, "disable_radix_cache": False}})
    w = _Walk(case, ServerObs())
    assert "not a whole number of pages" in w.hit(Forward(2, 2, "EXTEND", (1,), ((5, 2),)))
    assert w.hit(Forward(2, 2, "EXTEND", (1,), ((4, 3),))) is None


def test_the_config_refusal():
    assert not not_driven_with(ServerConfig(disable_radix_cache=False))
    assert not_driven_with(ServerConfig(disable_radix_cache=False, tp_size=2))
    assert not not_driven_with(ServerConfig(tp_size=2))
    # decode graphs are driven with the tree (the base pipeline's graph runner)
    assert not not_driven_with(ServerConfig(disable_radix_cache=False, disable_cuda_graph=False,
                                            cuda_graph_bs_decode=(1, 2)))
    assert not_driven_with(ServerConfig(disable_radix_cache=False, speculative_algorithm="EAGLE"))


@settings(max_examples=30, derandomize=True, database=None)
@given(radix_cases(), st.just(None))
def test_server_radix_draws(case, _):
    assert case.kind == "server_radix" and not case.config.disable_radix_cache
    assert any(r.prefix_group is not None for r in case.requests) or len(case.requests) >= 1
    assert case.config.page_size in (1, 2, 4, 8)


def test_the_tree_pipeline_is_the_sglang_parts_typed_slot():
    """``server_tree`` is a typed slot of the radix feature's ``sglang`` part (not a hook
    point): one part fills it, naming the tree pipeline's run (found, not imported: it imports
    the release)."""
    import importlib.util

    from swafuzz import features
    from swafuzz.features.parts import lazy
    from swafuzz.features.radix_tree.sglang_part import RadixTreeSGLang

    assert "sglang.server_tree" not in features.HOOK_POINTS
    filling = [p for p in features.parts("sglang") if "server_tree" in vars(p)]
    assert filling == [RadixTreeSGLang]
    ref = vars(RadixTreeSGLang)["server_tree"]
    assert isinstance(ref, lazy) and ref.ref == "swafuzz.features.radix_tree.sglang_server:run"
    assert importlib.util.find_spec(ref.ref.split(":")[0]) is not None
