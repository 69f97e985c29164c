"""bench/fleet.py's flags (the run itself: tests/fleet/test_fleet_bench_rows.py, in the fleet tier)."""

from swafuzz.harness.cli.commands import main


def test_bench_fleet_bad_flags_exit_2(tmp_path, capsys):
    for args, word in ((["--nodes", "x"], "--nodes"), (["--workers", "0"], "--workers"),
                       (["--scenario", "nosuch"], "--scenario"), (["--shards", "1"], "--shards")):
        assert main(["bench", "fleet", "--out", str(tmp_path / "b"), *args]) == 2
        assert word in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_bench_fleet_without_ray_says_so(monkeypatch):
    import sys

    from swafuzz.bench import fleet

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert "not run: ray is not installed in" in fleet.ray_missing()
