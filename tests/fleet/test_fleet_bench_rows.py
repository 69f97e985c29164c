"""bench/fleet.py end to end: one command, every row side by side - ``--workers 1`` and ``2``, a
Ray cluster of this machine with one worker node, and two shards merged - at a tiny size (the
numbers depend on the machine's load; the lead's measurement is in docs/STATUS.md). In the fleet
tier (``python3 bootstrap.py fleet-tier``): it starts a Ray cluster and runs for minutes."""

import json

import pytest

pytest.importorskip("ray", reason="the fleet tier needs ray: python3 bootstrap.py fleet-tier")

from swafuzz.harness.cli.commands import main  # noqa: E402


def test_bench_fleet_rows_side_by_side(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["bench", "fleet", "--out", str(out), "--examples", "6", "--scenario", "idle",
                 "--scenario", "decode", "--nodes", "1", "--startup-samples", "1",
                 "--profile"]) == 0
    md = (out / "fleet-bench.md").read_text()
    assert md in capsys.readouterr().out
    res = json.loads((out / "fleet-bench.json").read_text())
    assert [r["mode"] for r in res["rows"]] == ["--workers 1", "--workers 2", "--ray, 1 node",
                                                "--shard 1/2 .. 2/2 + merge"]
    rows = res["rows"]
    assert rows[0]["ratio"] == 1.0 and all("skipped" not in r for r in rows)
    # every row ran the same campaign: the same Cases, so the same checked forward steps
    assert len({(r["cases"], r["forward_steps"]) for r in rows}) == 1 and rows[0]["cases"] > 0
    shard = rows[-1]
    assert abs(shard["wall_s"] - shard["shards_wall_s"] - shard["merge_s"]) <= 0.02
    assert len(shard["shard_run_s"]) == 2 and shard["first_case_s"] > 0
    for r in rows:
        assert r["steps_per_s"] == round(r["forward_steps"] / r["wall_s"], 2)
        assert r["profile"]["swafuzz CLI"]["cpu_s"] > 0 and r["cpu_s"] > 0
    assert rows[1]["profile"]["pool process"]["processes"] >= 2  # (and a forkserver)
    assert rows[2]["profile"]["ray worker"]["cpu_s"] > 0 and rows[2]["cluster_start_s"] > 0
    assert res["startup"]["case_worker"]["median_s"] > 0 and res["load_start"]
    assert "| --workers 2 |" in md and "Start-up pieces timed alone" in md
