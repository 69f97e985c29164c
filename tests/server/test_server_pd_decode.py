"""The decode side of PD disaggregation as a server kind (``server_pd_decode``): the release's
prealloc queue taking over transferred prompts (``features/pd_decode/sglang_server.py``), judged
by the plain-Python oracle (``features/pd_decode/server_oracle.py``)."""

from __future__ import annotations

import contextlib
import importlib.util

import pytest

from swafuzz.server.case import parse


def upstream(f):
    """A test that runs the release (the ``upstream`` marker, skipped without SGLang)."""
    for m in (pytest.mark.usefixtures("pipeline_here"),
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)"),
              pytest.mark.upstream):
        f = m(f)
    return f


def _case(page: int, full: int = 32, backend: str = "fake") -> dict:
    """Four staggered prompts; the full pool tight enough that the last two take over pages
    the first two left (recycled)."""
    return {"config": {"page_size": page, "disaggregation_mode": "decode",
                       "disaggregation_transfer_backend": backend,
                       "num_reserved_decode_tokens": 1},
            "model": {"full_tokens": full, "swa_tokens": 32, "sliding_window": 3,
                      "swa_eviction_interval": 1},
            "requests": [{"prompt_len": 9, "max_new_tokens": 6},
                         {"prompt_len": 11, "max_new_tokens": 3, "arrive_step": 1},
                         {"prompt_len": 13, "max_new_tokens": 5, "arrive_step": 7},
                         {"prompt_len": 9, "max_new_tokens": 5, "arrive_step": 9}]}


def test_config_refusal_names_the_field():
    from swafuzz.features.pd_decode.server_rules import not_driven_with

    assert not not_driven_with(parse(_case(2)).config)
    assert not_driven_with(parse(_case(2, backend="mooncake")).config)
    assert not not_driven_with(parse({"requests": [{"prompt_len": 3}]}).config)


def test_admission_order_is_checked():
    from swafuzz.features.pd_decode.server_oracle import admission

    case = parse(_case(2))
    assert admission(case, {"0": [0], "1": [1], "7": [2], "9": [3]}) is None
    assert "order" in admission(case, {"0": [0], "1": [2]})
    assert "before it arrives" in admission(case, {"0": [0, 1]})


def _run(page: int, mutant: str | None = None):
    from swafuzz.features.pd_decode import sglang_server, sglang_server_mutants
    from swafuzz.features.pd_decode.server_oracle import judge
    from swafuzz.targets.sglang.pipeline import seams
    from swafuzz.targets.sglang.pipeline.steps import Pipeline, eviction_interval

    case = parse(_case(page))
    from swafuzz.server.run import refusal
    from swafuzz.targets.sglang.pipeline.argnames import release_refusal
    why = refusal(case, release_refusal)  # the takeover's release shape (0.5.19 .. 0.5.23)
    if why:
        pytest.skip(why)
    from swafuzz.targets import TargetUnavailable
    try:  # a mutant of a function the release lacks: not this release's (named)
        bug = getattr(sglang_server_mutants, mutant)() if mutant else contextlib.nullcontext()
    except TargetUnavailable as e:
        pytest.skip(str(e))
    with bug, eviction_interval(1), seams.cpu_platform():
        obs = sglang_server.run(case, "torch", None, Pipeline)
    return case, obs, judge(case, obs)


@upstream
@pytest.mark.parametrize("page", [1, 2, 4])
def test_release_takeover_and_decodes_as_predicted(page):
    case, obs, fails = _run(page)
    assert obs.error is None and obs.out_of_scope is None, (obs.error, obs.out_of_scope)
    assert fails == [], fails
    recs = obs.takeover["records"]
    assert sorted(int(r) for r in recs) == [0, 1, 2, 3]
    # every window read checked: one read record per DECODE, every request in it
    assert len(obs.takeover["reads"]) == len(obs.forwards) > 0
    if page > 1:  # the head maps to 0, later requests take over pages earlier ones left
        assert all(rec["mapping"][0] == 0 for rec in recs.values())
        assert set(recs[2]["loc"]) & set(recs[0]["loc"] + recs[1]["loc"])


@upstream
@pytest.mark.parametrize("mutant,check", [
    ("tail_short_by_a_page", "takeover"),
    ("tail_prealloc_off", "takeover"),
    ("swa_pages_untranslated", "takeover_reads"),
])
def test_mutants_are_caught(mutant, check):
    _, _, fails = _run(4, mutant)
    assert check in {f.check for f in fails}, fails


def test_older_release_is_refused_by_name(monkeypatch):
    from swafuzz.features.pd_decode import server_rules

    def missing(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(server_rules.importlib, "import_module", missing)
    why = server_rules.refusal({"disaggregation_mode": "decode"}, "0.5.12")
    assert why.startswith("config.disaggregation_mode: sglang 0.5.12 lacks")
    assert server_rules.refusal({"disaggregation_mode": "null"}, "0.5.12") is None
