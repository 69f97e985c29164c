"""bench/harness.py measures 1 and N workers in one run and reports cases/s, checked forward
steps/s and the ratio (a smoke test: the numbers themselves depend on the machine's load)."""

import json

from swafuzz.harness.cli.commands import main


def test_bench_harness_one_and_two_workers(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "harness", "--workers", "2", "--examples", "8", "--json",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "cases/s" in text and "steps/s" in text and "ratio" in text
    res = json.loads(out.read_text())
    assert [r["workers"] for r in res["rounds"]] == [1, 2]
    one, two = res["rounds"]
    assert one["ratio"] == 1.0 and one["cases"] > 0 and one["forward_steps"] > 0
    assert two["cases"] >= one["cases"]  # two workers, disjoint seeds, the same work each
    assert len(two["per_worker_seconds"]) == 2 and two["failed"] == 0


def test_bench_harness_bad_workers(capsys):
    assert main(["bench", "harness", "--workers", "two"]) == 2
    assert "--workers" in capsys.readouterr().err
