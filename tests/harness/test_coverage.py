"""harness.pipeline.coverage: a fake module measured in a child interpreter as a case worker does, the
data merged into the per-module / per-function report; the --coverage flag's usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from swafuzz.harness.cli.commands import main
from swafuzz.harness.pipeline import coverage as hcov

FAKE = textwrap.dedent('''\
    def clamp(x, lo, hi):
        if x < lo:
            return lo
        if x > hi:
            return hi
        return x


    def never(x):
        return -x
''')

CHILD = textwrap.dedent('''\
    import json, sys
    from swafuzz.harness.pipeline.coverage import ChildCoverage
    import fakepkg.mod as m  # the target loads first (its import is not measured)
    cov = ChildCoverage(sys.argv[1], ["fakepkg"])
    m.never(1)  # the child's setup, before any Case: not a Case's (not reported)
    news = []
    cov.before_case(); m.clamp(5, 0, 10); news.append(cov.after_case())
    cov.before_case(); m.clamp(5, 0, 10); news.append(cov.after_case())   # nothing new
    cov.before_case(); m.clamp(-1, 0, 10); news.append(cov.after_case())  # the x < lo branch
    cov.stop()
    print(json.dumps(news))
''')


def test_child_measures_and_report_lists_unreached(tmp_path):
    pytest.importorskip("coverage")
    pkg = tmp_path / "src" / "fakepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(FAKE)
    out = tmp_path / "run"
    env_path = f"{tmp_path / 'src'}:{':'.join(p for p in sys.path if p)}"
    r = subprocess.run([sys.executable, "-c", CHILD, str(out / hcov.COVERAGE_DIR)],
                       capture_output=True, text=True, env={"PYTHONPATH": env_path},
                       check=True)
    first, again, third = json.loads(r.stdout.strip().splitlines()[-1])
    assert first > 0 and again == 0 and third > 0
    summary = hcov.combine(str(out))
    (mod,) = summary["modules"]  # fakepkg/__init__ has no function: not driven
    assert mod["module"].endswith("fakepkg.mod")
    assert (mod["lines"], mod["covered_lines"]) == (6, 4)  # function bodies: `return hi`, `return -x` missed
    assert (mod["branches"], mod["covered_branches"]) == (4, 3)  # x > hi never true
    (part,) = mod["partial"]
    assert part["function"] == "clamp" and part["missing_lines"] == [5]
    assert part["missing_branches"] == [[4, 5]]
    assert mod["never_called"] == ["never"]
    assert (mod["called"], mod["functions"], mod["called_lines"], mod["called_branches"]) == (
        1, 2, 5, 4)
    md = (out / "coverage.md").read_text()
    assert "`clamp`: branches 3/4, unreached arcs 4->5, lines 5" in md
    assert json.loads((out / "coverage.json").read_text()) == summary
    (name,) = summary["functions"]  # per called function: the Cases that ran it
    assert name.endswith("fakepkg.mod:clamp") and summary["functions"][name] == {
        "cases": 3, "branches": 4, "covered_branches": 3}


def test_compact():
    assert hcov.compact([3, 4, 5, 9, 11, 12]) == "3-5, 9, 11-12"


def test_coverage_flag_without_coverage_is_exit_2(tmp_path, monkeypatch, capsys):
    def missing():
        raise hcov.CoverageMissing("--coverage: coverage.py is not installed (pip install "
                                   "'swafuzz[coverage]', or pip install coverage)")
    monkeypatch.setattr(hcov, "require", missing)
    out = tmp_path / "o"
    assert main(["run", "--target", "unified", "--examples", "1", "--coverage",
                 "--out", str(out)]) == 2
    assert "swafuzz[coverage]" in capsys.readouterr().err
    assert not out.exists()


def test_coverage_flag_needs_case_workers(tmp_path, capsys):
    assert main(["run", "--examples", "1", "--coverage-bias", "--no-isolate",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--no-isolate" in capsys.readouterr().err


def test_resume_refuses_a_coverage_change(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--impl", "torch", "--scenario", "decode", "--examples", "1",
                 "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--coverage"]) == 2
    assert "--coverage  (the run's: coverage off)" in capsys.readouterr().err
