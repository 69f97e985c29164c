"""``swafuzz run --target sglang --level server --coverage`` on the release (marker ``upstream``:
needs SGLang). Two case workers, forked from one zygote that imported the release: every Case
prefills, so the release's ``ScheduleBatch.prepare_for_extend`` is called by every Case and
``coverage.json`` says so (``cases``), and the SWA-path focus list
(``swafuzz/targets/sglang/coverage_focus.py``) is reported with what the release has of it.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.usefixtures("pipeline_here"),
              pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                 reason="sglang is not installed (scripts/upstream-env VERSION)")]


def test_server_coverage_counts_the_cases_of_each_release_function(tmp_path, capsys):
    pytest.importorskip("coverage")
    from swafuzz.harness.cli.commands import main

    out = tmp_path / "cov"
    code = main(["run", "--target", "sglang", "--level", "server", "--scenario",
                 "server_decode", "--examples", "6", "--workers", "2", "--coverage",
                 "--ledger", "none", "--quiet", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    cov = json.loads((out / "coverage.json").read_text())
    run = json.loads((out / "run.json").read_text())
    extend = cov["functions"]["sglang.srt.managers.schedule_batch:ScheduleBatch.prepare_for_extend"]
    assert extend["cases"] == run["cases"] == 6
    focus = cov["focus"]
    assert focus["total"]["called"] >= 10 and focus["total"]["functions"] > focus["total"]["called"]
    assert focus["functions"]["sglang.srt.managers.schedule_batch:ScheduleBatch.prepare_for_extend"
                              ]["cases"] == 6
    assert "coverage of the target's functions of interest" in stdout
    assert (out / "coverage.md").read_text().startswith("## The target's functions of interest")
