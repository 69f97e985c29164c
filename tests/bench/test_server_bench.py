"""``swafuzz bench server`` (swafuzz/bench/server.py): its input errors exit 2 naming the flag
before anything runs, and its table's ratios are over the first row of the same bench. (The
bench itself drives SGLang: measured by hand, docs/COVERAGE.md / the session's report.)"""

from __future__ import annotations

import argparse

from swafuzz.bench import server


def test_bad_rows_and_examples_exit_2_naming_the_flag(tmp_path, capsys):
    assert server.main(["--out", str(tmp_path / "b"), "--rows", "1,3"]) == 2
    assert "--rows: '3' is not a row (allowed: 1, 2, 2-fresh)" in capsys.readouterr().err
    assert server.main(["--out", str(tmp_path / "b"), "--examples", "1"]) == 2
    assert "--examples: must be >= 2" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_ratios_are_over_the_first_row():
    def row(name, workers, run_rate, steady_rate):
        return {"row": name, "workers": workers, "zygote": True, "cases": 40, "wall_s": 1,
                "run_s": 1, "steady_s": 1, "wall_rate": 1, "run_rate": run_rate,
                "steady_rate": steady_rate, "load_before": [1.0], "load_after": [2.0]}
    args = argparse.Namespace(target="sglang", examples=40, scenario=None, seed=0)
    md = server.render([row("1", 1, 2.0, 4.0), row("2", 2, 3.7, 7.6)], args)
    line = next(x for x in md.splitlines() if x.startswith("| 2 |"))
    assert "| 1.85x | 1.90x |" in line and "| 1.0 -> 2.0 |" in line
