"""The server-level campaign's crash isolation on the release's own pipeline (marker
``upstream``: needs SGLang; ``scripts/upstream-check`` runs it): target ``fixture:sglang_segv``
(``tests/data/server_plugin``) segfaults on every ``server_decode`` Case and runs the ``sglang``
target's server pipeline for the other kinds. The crash is a ``server:crash`` finding written
before the next Case, and the next kind's Cases run through the release's pipeline in a fresh
case worker, under a server mutant (a patch of the release's ``prepare_for_decode``, spec §9.3)
that the worker's Cases kill: a finding of the release's pipeline through the worker. (The same promises without SGLang, and --workers / --budget / Ctrl-C /
--resume: ``tests/harness/test_server_isolation.py``.)
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.usefixtures("pipeline_here"),
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)")]

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "server_plugin"


def test_a_segfault_is_a_finding_and_the_release_pipeline_runs_on(tmp_path, capsys, monkeypatch):
    from swafuzz.harness.cli.commands import main

    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PLUGIN_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out = tmp_path / "run"
    code = main(["run", "--plugin", "swafuzz_server_fixture", "--target", "fixture:sglang_segv",
                 "--level", "server", "--scenario", "server_decode", "--scenario", "server_mixed",
                 "--examples", "24", "--shrink-budget", "0", "--impl", "torch", "--quiet",
                 "--server-mutant", "server_decode_stale_loc", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1, err
    run = json.loads((out / "run.json").read_text())
    assert run["findings"] == ["findings/server-crash.server_decode.json",
                               "findings/server-write_targets.server_mixed.json"], run
    bundle = json.loads((out / run["findings"][0]).read_text())
    assert bundle["signature"] == "server:crash" and bundle["case"]["kind"] == "server_decode"
    assert "(SIGSEGV) inside the case" in bundle["failures"][0]["message"]
    killed = json.loads((out / run["findings"][1]).read_text())
    assert killed["server_mutant"] == "server_decode_stale_loc" and killed["observed"]["forwards"]
    rows = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    crash = next(i for i, r in enumerate(rows) if r.get("signature") == "server:crash")
    after = [r for r in rows[crash + 1:] if r.get("kind") == "server_mixed" and "case" in r]
    assert after and after[-1]["signature"] == "server:write_targets"
    assert any(r["out_of_scope"] is None for r in after)  # the release's forwards ran
