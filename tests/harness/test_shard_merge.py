"""``swafuzz run --shard I/N`` and ``swafuzz merge``: the shards of a campaign, merged, equal the
unsharded run (units, Cases, findings), with findings found by several shards deduplicated; what
is not the shards of one run is refused (exit 2, nothing written).

The campaigns run ``python -m swafuzz`` in subprocesses, as CI would, on the torch path with the
eager executor and a mutant that every ``idle`` and ``decode`` Case kills:

* ``whole``, ``s1``, ``s2``: kinds idle and decode, unsharded and as shards 1/2 and 2/2 (one
  unit each): merged, the shards equal the whole run row for row;
* ``d1``, ``d2``: kind idle alone on 2 shards, which plans 2 units (``idle.0``, ``idle.1``: the
  units of an unsharded ``--workers 2`` run), one per shard; both find the mutant, so the merge
  has a signature to deduplicate.

Each run is in its own ``python -m swafuzz`` process with one worker, so the Hypothesis constants
pool (which depends on the modules a process has loaded) is the same for all of them.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys

import pytest
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

from swafuzz.harness.cli.commands import main
from swafuzz.harness.fleet import merge as merge_mod
from swafuzz.harness.fleet.shard import ShardSpecError, full_plan, parse_shard, shard_units
from swafuzz.harness.pipeline.runconfig import RunConfig, plan_units
from swafuzz.harness.report import read as report
from swafuzz.reports.dedup import case_size

ENV = {k: v for k, v in os.environ.items() if k != "SWAFUZZ_PLUGINS"}
CAMPAIGN = ["--target", "mutant:rows_misaligned", "--impl", "torch", "--executor", "eager",
            "--scenario", "idle", "--examples", "8", "--seed", "3", "--shrink-budget", "20",
            "--no-isolate", "--quiet", "--ledger", "none"]
RUNS = {"whole": ["--scenario", "decode"],
        "s1": ["--scenario", "decode", "--shard", "1/2"],
        "s2": ["--scenario", "decode", "--shard", "2/2"],
        "d1": ["--shard", "1/2"], "d2": ["--shard", "2/2"]}
IDLE = "pool_bytes_idle_live.json"
TIMING = ("seconds", "t", "shard")


def swafuzz(*args):
    return subprocess.run([sys.executable, "-m", "swafuzz", *map(str, args)],
                          capture_output=True, text=True, timeout=HANG_S, env=ENV)


def log(d):
    with open(os.path.join(d, "cases.jsonl")) as f:
        return [json.loads(x) for x in f]


def meta(d):
    with open(os.path.join(d, "run.json")) as f:
        return json.load(f)


def bundles(d):
    fd = os.path.join(d, "findings")
    out = {}
    for n in sorted(os.listdir(fd)) if os.path.isdir(fd) else []:
        with open(os.path.join(fd, n)) as f:
            out[n] = json.load(f)
    return out


def comparable(row):
    row = {k: v for k, v in row.items() if k not in TIMING}
    if isinstance(row.get("verdict"), dict):
        row["verdict"] = {k: v for k, v in row["verdict"].items() if k not in TIMING}
    return json.dumps(row, sort_keys=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs of :data:`RUNS` (module docstring), at the same time; once per test session
    (shared by the xdist workers, under a lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this session's, shared by its workers
    d = base / "shard-merge-runs"
    with open(base / "shard-merge-runs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / "done").exists():
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            procs = {n: subprocess.Popen([sys.executable, "-m", "swafuzz", "run", *CAMPAIGN,
                                          *a, "--out", str(d / n)],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, env=ENV) for n, a in RUNS.items()}
            for name, p in procs.items():
                text = p.communicate(timeout=HANG_S)[0]
                assert p.returncode == 1, f"{name}: {text}"  # the mutant is found
            (d / "done").write_text("")
    return d


# --------------------------------------------------------------------------- the slices
@pytest.mark.parametrize("kinds", [1, 2, 3, 5])
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("examples", [3, 10, 300])
def test_shards_partition_the_fleet_plan(kinds, workers, n, examples):
    cfg = RunConfig(kinds=[f"k{i}" for i in range(kinds)], examples=examples, workers=workers,
                    seed=5)
    fleet = plan_units(dataclasses.replace(cfg, workers=workers * n))
    slices = [shard_units(dataclasses.replace(cfg, shard=[i, n])) for i in range(1, n + 1)]
    ids = [u.id for s in slices for u in s]
    assert sorted(ids) == sorted(u.id for u in fleet) and len(ids) == len(set(ids))
    assert sorted((u.id, u.seed, u.examples) for s in slices for u in s) \
        == sorted((u.id, u.seed, u.examples) for u in fleet)
    assert sum(u.examples for s in slices for u in s) == examples
    assert full_plan(dataclasses.replace(cfg, shard=[1, n])) == fleet
    if kinds >= workers * n:  # enough kinds: the plan of the same flags unsharded, any workers
        assert fleet == plan_units(cfg) == plan_units(dataclasses.replace(cfg, workers=1))
    sizes = [len(s) for s in slices]
    assert max(sizes) - min(sizes) <= 1  # round robin


def test_shard_values():
    assert parse_shard("1/1") == [1, 1] and parse_shard(" 3/4 ") == [3, 4]
    for bad in ("0/2", "3/2", "a/b", "1/0", "2", "-1/2", "1/2/3", "", "1/-2", "1.0/2"):
        with pytest.raises(ShardSpecError, match=r"^--shard: .* I/N with whole numbers"):
            parse_shard(bad)


@pytest.mark.parametrize("bad", ["0/2", "3/2", "a/b"])
def test_bad_shard_is_a_usage_error_before_anything_is_written(bad, tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    out = tmp_path / "o"
    assert main(["run", "--shard", bad, "--out", str(out), "--examples", "2"]) == 2
    err = capsys.readouterr().err
    assert "--shard" in err and "I/N" in err and repr(bad) in err
    assert not out.exists()


# --------------------------------------------------------------------------- merged == whole
def test_merged_shards_equal_the_unsharded_run(runs, tmp_path):
    m = tmp_path / "merged"
    p = swafuzz("merge", runs / "s1", runs / "s2", "--out", m)
    assert p.returncode == 1, p.stdout + p.stderr  # findings the ledger does not know
    assert "merged 2 run directories (1/2, 2/2): 2 of 2 units" in p.stdout
    whole, merged = log(runs / "whole"), log(m)
    unit_ids = {r["unit"] for r in whole if r.get("event") == "unit_done"}
    assert unit_ids == {"idle.0", "decode.0"}
    assert {r["unit"] for r in merged if r.get("event") == "unit_done"} == unit_ids
    # the same Cases, each once: every row (unit, phase, Case, verdict, signature) but timings,
    # in the same order (the unsharded plan's)
    assert len([r for r in merged if "case" in r]) == len([r for r in whole if "case" in r]) > 4
    assert list(map(comparable, merged)) == list(map(comparable, whole))
    # each shard ran its own slice, recorded in run.json
    for i, unit in ((1, "idle.0"), (2, "decode.0")):
        assert meta(runs / f"s{i}")["shard"] == f"{i}/2"
        assert meta(runs / f"s{i}")["config"]["shard"] == [i, 2]
        assert {r["unit"] for r in log(runs / f"s{i}")} == {unit}
    assert [r["shard"] for r in merged] == [("1/2" if r["unit"] == "idle.0" else "2/2")
                                           for r in merged]
    # findings: the same signatures and bundles (Cases), each naming the shard that found it
    wb, mb = bundles(runs / "whole"), bundles(m)
    assert sorted(wb) == sorted(mb) == ["pool_bytes_decode_live.json", IDLE]
    for name, b in mb.items():
        assert b["signature"] == wb[name]["signature"] and b["case"] == wb[name]["case"]
        assert b["found_by_shards"] == [b["shard"]] == ["2/2" if "decode" in name else "1/2"]
        assert b["command"] == f"swafuzz repro findings/{name}"  # relative to the run dir
    mm, wm = meta(m), meta(runs / "whole")
    assert mm["config"]["shard"] is None and mm["config"]["workers"] == 2  # the fleet's
    assert {k: {f: v for f, v in s.items() if f != "seconds"} for k, s in mm["stats"].items()} \
        == {k: {f: v for f, v in s.items() if f != "seconds"} for k, s in wm["stats"].items()}
    assert mm["forward_steps"] == wm["forward_steps"]
    assert [x["shard"] for x in mm["merged_from"]] == ["1/2", "2/2"]
    # one report, as swafuzz report writes it
    for name in ("summary.md", "junit.xml", "summary.html"):
        assert (m / name).stat().st_size > 0
    junit = (m / "junit.xml").read_text()
    assert "pool_bytes/idle/live" in junit and "pool_bytes/decode/live" in junit
    assert main(["report", str(m)]) == 1


def test_a_finding_of_two_shards_is_one_bundle(runs, tmp_path):
    m = tmp_path / "merged"
    assert main(["merge", str(runs / "d2"), str(runs / "d1"), "--out", str(m)]) == 1
    fleet = plan_units(RunConfig(kinds=["idle"], examples=8, seed=3, workers=2))
    assert [u.id for u in fleet] == ["idle.0", "idle.1"]
    rows = log(m)
    assert [r["unit"] for r in rows if r.get("event") == "unit_done"] == ["idle.0", "idle.1"]
    assert sorted(map(comparable, rows)) == sorted(map(comparable, log(runs / "d1")
                                                       + log(runs / "d2")))
    for i in (1, 2):  # each shard found it and kept a bundle
        assert list(bundles(runs / f"d{i}")) == [IDLE]
    assert list(bundles(m)) == [IDLE]
    b = bundles(m)[IDLE]
    assert b["found_by_shards"] == ["1/2", "2/2"]
    sizes = {i: case_size(bundles(runs / f"d{i}")[IDLE]["case"]) for i in (1, 2)}
    assert case_size(b["case"]) == min(sizes.values())
    assert b["case"] == bundles(runs / f"d{b['shard'][0]}")[IDLE]["case"]
    summary = (m / "summary.md").read_text()
    assert summary.count("pool_bytes/idle/live") >= 1 and "decode" not in summary


def test_merge_keeps_the_smallest_bundle_and_names_its_shard(runs, tmp_path):
    for small, big in ((2, 1), (1, 2)):  # the smaller Case wins, in either shard
        d = {i: shutil.copytree(runs / f"d{i}", tmp_path / f"{small}" / f"d{i}") for i in (1, 2)}
        b = bundles(d[small])[IDLE]
        first = next(r for r in log(d[big]) if r.get("failed") and r["phase"] == "generate")
        assert case_size(first["case"]) > case_size(b["case"])  # the unshrunk first failure
        (d[big] / "findings" / IDLE).write_text(json.dumps({**bundles(d[big])[IDLE],
                                                            "case": first["case"]}))
        m = tmp_path / f"{small}" / "merged"
        assert main(["merge", str(d[2]), str(d[1]), "--out", str(m), "--no-ledger"]) == 1
        got = bundles(m)[IDLE]
        assert got["case"] == b["case"] and got["shard"] == f"{small}/2"
        assert got["found_by_shards"] == ["1/2", "2/2"]


# --------------------------------------------------------------------------- refusals
def _edit(d, **config):
    data = meta(d)
    data["config"].update(config)
    (d / "run.json").write_text(json.dumps(data))


@pytest.fixture
def copies(runs, tmp_path):
    return [shutil.copytree(runs / n, tmp_path / n) for n in ("s1", "s2", "whole")]


def test_merge_refuses_what_is_not_the_shards_of_one_run(copies, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    s1, s2, whole = copies
    out = tmp_path / "out"

    def refused(*dirs, extra=(), why):
        code = main(["merge", *map(str, dirs), "--out", str(out), *extra])
        err = capsys.readouterr().err
        assert code == 2 and why in err, err
        assert not out.exists(), "nothing written on a refusal"
        return err

    refused(s1, tmp_path / "nope", why=f"DIR: {str(tmp_path / 'nope')!r} is not a directory")
    (tmp_path / "empty").mkdir()
    refused(s1, tmp_path / "empty", why="is not a run directory")
    refused(s1, whole, why="is a whole run, not a shard")
    refused(whole, shutil.copytree(whole, tmp_path / "w2"), why="whole runs, not shards")
    refused(s1, shutil.copytree(s1, tmp_path / "s1b"), why="are both shard 1/2")
    refused(s1, why="shards 2/2 of 2 are missing")
    s3 = shutil.copytree(s2, tmp_path / "s3")
    _edit(s3, seed=4)
    refused(s1, s3, why="config field 'seed' differs (4 vs 3)")
    _edit(s3, seed=3, shard=[2, 3])
    refused(s1, s3, why="not shards of one split")
    _edit(s3, shard=[2, 2], kinds=["idle"])
    refused(s1, s3, why="config field 'kinds' differs")
    _edit(s3, kinds=["idle", "decode"], workers=2)
    refused(s1, s3, why="plans other units")
    rows = (s2 / "cases.jsonl").read_text().splitlines()
    (s3 / "cases.jsonl").write_text("\n".join(r for r in rows if "unit_done" not in r) + "\n")
    _edit(s3, workers=1)
    err = refused(s1, s3, why="has 1 unfinished units (decode.0)")
    assert f"swafuzz run --resume {s3}" in err and "--partial" in err
    refused(s1, s2, extra=("--ledger", str(tmp_path / "no-ledger.json")), why="--ledger:")
    out.mkdir()
    (out / "x").write_text("")
    assert main(["merge", str(s1), str(s2), "--out", str(out)]) == 2
    assert f"--out: {str(out)!r} is not empty" in capsys.readouterr().err
    assert os.listdir(out) == ["x"]


def test_partial_merges_what_there_is_and_lists_the_rest(copies, tmp_path):
    s1 = copies[0]
    m = tmp_path / "m"
    assert main(["merge", str(s1), "--out", str(m), "--partial", "--no-ledger"]) == 1
    assert meta(m)["missing_shards"] == ["2/2"]
    assert {r["unit"] for r in log(m)} == {"idle.0"}


def test_a_failure_after_the_rename_leaves_out_as_it_was(copies, tmp_path, monkeypatch):
    s1, s2, _ = copies
    out = tmp_path / "out"
    out.mkdir()  # an empty --out is allowed; on failure it is empty again

    def boom(d, **kw):
        assert os.path.exists(os.path.join(d, "run.json"))  # it runs on the complete directory
        raise OSError("disk full")

    monkeypatch.setattr("swafuzz.harness.report.read.build", boom)
    with pytest.raises(OSError):
        merge_mod.merge([str(s1), str(s2)], str(out), finish=lambda d: report.build(d))
    assert out.is_dir() and not os.listdir(out)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".swafuzz-merge-")]


def test_a_whole_run_merges_to_a_copy_of_itself(copies, tmp_path):
    whole = copies[2]
    m = tmp_path / "m"
    assert main(["merge", str(whole), "--out", str(m), "--no-ledger"]) == 1
    assert list(map(comparable, log(m))) == list(map(comparable, log(whole)))
    assert all("shard" not in r for r in log(m))
    assert {n: b["case"] for n, b in bundles(m).items()} \
        == {n: b["case"] for n, b in bundles(whole).items()}
    assert meta(m)["missing_shards"] == [] and meta(m)["config"]["workers"] == 1
