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


def test_cpu_roles_and_implied_ratios():
    from swafuzz.bench import server_cpu

    # a tree: CLI -> forkserver -> pool process; CLI -> zygote -> case worker
    assert server_cpu.server_role(1, 1, "") == "driver"
    cpu1 = {"steady": {"driver": 0.5, "case worker": 4.5}, "steady_cases": 100}
    cpu2 = {"steady": {"driver": 0.01, "pool process": 0.4, "case worker": 5.5, "zygote": 0.0},
            "steady_cases": 100}
    b, r = server_cpu.per_case(cpu1), server_cpu.per_case(cpu2)
    assert b["pipeline"] == b["total"] == 50.0  # one worker: the driver runs the unit
    assert r["pipeline"] == 59.0 and r["total"] == 59.1
    # min(2 x 50 / 59, 2 cores x 50 / 59.1); harness only: the case worker at the base's 45 ms
    assert server_cpu.implied_ratio(b, r, 2, cores=2) == 1.69
    assert server_cpu.implied_ratio(b, r, 2, cores=2, harness_only=True) == 2.04
    assert server_cpu.implied_ratio(b, r, 2, cores=1) == 0.85
    assert server_cpu.per_case({"steady": {}, "steady_cases": 0}) == {}


def test_cpu_roles_from_the_process_tree(monkeypatch):
    from swafuzz.bench import server_cpu

    cmds = {2: "python -c from multiprocessing.forkserver import main; main(3)",
            3: "python -c from multiprocessing.forkserver import main; main(3)",
            4: "python -c import sys; from swafuzz.harness.pipeline.zygote import _main; x",
            5: "python -c import sys; from swafuzz.harness.pipeline.zygote import _main; x",
            6: "python -c from multiprocessing.resource_tracker import main;main(9)"}
    monkeypatch.setattr(server_cpu, "cmdline", cmds.get)
    assert server_cpu.server_role(2, 1, "driver") == "forkserver"
    assert server_cpu.server_role(3, 1, "forkserver") == "pool process"
    assert server_cpu.server_role(4, 1, "driver") == "zygote"
    assert server_cpu.server_role(5, 1, "zygote") == "case worker"
    assert server_cpu.server_role(6, 1, "driver") == "resource tracker"
    assert server_cpu.server_role(7, 1, "driver") == "gone"


def test_the_cpu_table_names_each_role():
    pc1 = {"driver": 4.7, "case worker": 42.7, "pipeline": 47.4, "total": 47.4}
    pc2 = {"driver": 0.1, "pool process": 3.2, "case worker": 55.5, "pipeline": 58.7,
           "total": 58.8}
    rows = [{"row": "1", "workers": 1, "cpu_ms_per_case": pc1, "cpu": {"all_s": 21.0}},
            {"row": "2", "workers": 2, "cpu_ms_per_case": pc2, "cpu": {"all_s": 26.0}}]
    lines = server.render_cpu(rows)
    assert lines[0].startswith("| row | driver ms/Case | pool process ms/Case | case worker")
    two = next(x for x in lines if x.startswith("| 2 |"))
    assert "| 58.7 | 58.8 |" in two and two.endswith("| 26.0 |")
