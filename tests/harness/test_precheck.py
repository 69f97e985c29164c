"""Usage errors are answered before anything heavy loads (``swafuzz.harness.cli.precheck``):
every bad value below exits 2 with one line naming its field, in a fresh interpreter that never
imports torch, Triton, Hypothesis, SGLang or an engine; good values pass the light checks; the
bug zoo's names read from source are the names the loaded zoo registers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from swafuzz.harness.cli.parser import build_parser
from swafuzz.harness.cli.precheck import precheck, target_names
from swafuzz.harness.cli.usage import UsageError
from swafuzz.targets.mutant_names import declared

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAVY = ("torch", "triton", "hypothesis", "sglang", "numpy", "swafuzz.targets.engine",
         "swafuzz.harness.cli.commands")

# (argv, the field the one line names)
BAD = [
    (["run", "--workers", "0"], "--workers"),
    (["run", "--examples", "0"], "--examples"),
    (["run", "--shard", "3/2"], "--shard"),
    (["run", "--shard", "x"], "--shard"),
    (["run", "--budget", "soon"], "--budget"),
    (["run", "--shrink-budget", "-1"], "--shrink-budget"),
    (["run", "--known-cap", "0"], "--known-cap"),
    (["run", "--target", "nope"], "--target"),
    (["run", "--target", "mutant:nope"], "--target"),
    (["run", "--scenario", "nope"], "--scenario"),
    (["run", "--scenario", "server_decode"], "--scenario"),
    (["run", "--level", "server", "--scenario", "decode"], "--scenario"),
    (["run", "--level", "server", "--server-mutant", "nope"], "--server-mutant"),
    (["run", "--server-mutant", "server_decode_stale_loc"], "--server-mutant"),
    (["run", "--impl", "fortran"], "--impl"),
    (["run", "--executor", "jit"], "--executor"),
    (["run", "--out", "{file}/sub"], "--out"),
    (["run", "--out", "{full}"], "--out"),
    (["run", "--resume", "{empty}"], "--resume"),
    (["zoo", "--mutant", "nope"], "--mutant"),
    (["zoo", "--level", "server", "--mutant", "ring_no_mod"], "--mutant"),
    (["zoo", "--examples", "0"], "--examples"),
    (["zoo", "--budget", "huge"], "--budget"),
    (["zoo", "--budget", "ci", "--seeds", "2"], "--seeds"),
    (["zoo", "--json", "{file}/x.json"], "--json"),
    (["list", "--json"], "--json"),
    (["list", "--target", "nope"], "--target"),
    (["list", "--target", "unified", "--features"], "--features"),
    (["repro", "{missing}"], "FILE"),
    (["repro", "{file}"], "FILE"),
    (["repro", "{bundle}", "--target", "nope"], "--target"),
    (["bisect", "{missing}"], "FILE"),
    (["bisect", "{bundle}", "--releases", "0.5.x..0.5.23"], "--releases"),
    (["bisect", "{bundle}", "--releases", "0.5.23..0.5.12"], "--releases"),
    (["bisect", "{bundle}", "--releases", "0.5.12,latest"], "--releases"),
    (["run", "--db", "ftp://x"], "--db"),
    (["run", "--db", "redis://host"], "--db"),
    (["run", "--db", "redis://host:1/x"], "--db"),
    (["report", "{missing}"], "DIR"),
    (["report", "{empty}", "--reruns", "-1"], "--reruns"),
    (["merge", "{missing}", "--out", "{new}"], "DIR"),
]

SCRIPT = r"""
import io, json, sys
from swafuzz.__main__ import entry
out, cases, heavy = [], json.loads(sys.argv[1]), json.loads(sys.argv[2])
for argv in cases:
    sys.argv = ["swafuzz"] + argv
    err, sys.stderr = sys.stderr, io.StringIO()
    try:
        rc = entry()
    finally:
        text, sys.stderr = sys.stderr.getvalue(), err
    out.append([rc, text])
print(json.dumps({"results": out, "heavy": [m for m in heavy if m in sys.modules]}))
"""


def _paths(tmp_path):
    file = tmp_path / "afile"
    file.write_text("not json")
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps({"case": {}}))
    return {"file": str(file), "full": str(full), "empty": str(empty), "bundle": str(bundle),
            "missing": str(tmp_path / "missing"), "new": str(tmp_path / "new")}


def test_bad_input_exits_2_naming_the_field_without_heavy_imports(tmp_path):
    paths = _paths(tmp_path)
    argvs = [[a.format(**paths) for a in argv] for argv, _ in BAD]
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("SWAFUZZ_PLUGINS", None)
    got = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argvs), json.dumps(HEAVY)],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert got.returncode == 0, got.stderr[-3000:]
    res = json.loads(got.stdout)
    assert res["heavy"] == [], f"usage errors imported {res['heavy']}"
    for (argv, field), (rc, text) in zip(BAD, res["results"]):
        lines = text.strip().splitlines()
        assert rc == 2, (argv, rc, text)
        assert len(lines) == 1, (argv, text)
        assert lines[0].startswith(f"swafuzz {argv[0]}: error: "), (argv, text)
        assert field in lines[0], (argv, field, text)
    assert os.listdir(paths["empty"]) == [] and not os.path.exists(paths["new"])


@pytest.mark.parametrize("argv", [
    ["run"], ["run", "--target", "mutant:ring_no_mod", "--scenario", "ring"],
    ["run", "--target", "sglang", "--target", "unified", "--shard", "2/4", "--budget", "90s"],
    ["run", "--level", "server", "--scenario", "server_decode",
     "--server-mutant", "server_decode_stale_loc"],
    ["zoo", "--mutant", "ring_no_mod", "--budget", "ci"], ["zoo", "--level", "server"],
    ["zoo", "--level", "server", "--mutant", "server_decode_stale_loc"],
    ["list"], ["list", "--target", "sglang"], ["list", "--features", "--json"],
])
def test_good_input_passes_the_light_checks(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    precheck(build_parser().parse_args(argv))


def test_a_plugin_target_is_left_to_the_command(monkeypatch):
    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)
    precheck(build_parser().parse_args(["run", "--plugin", "my.plugin", "--target", "mine"]))
    monkeypatch.setenv("SWAFUZZ_PLUGINS", "my.plugin")
    precheck(build_parser().parse_args(["list", "--target", "mine"]))
    monkeypatch.delenv("SWAFUZZ_PLUGINS")
    with pytest.raises(UsageError, match="--target"):
        precheck(build_parser().parse_args(["list", "--target", "mine"]))


def test_zoo_names_read_from_source_are_the_loaded_zoos():
    from swafuzz import targets
    from swafuzz.targets.mutants import load_all, load_server

    names = declared()
    assert names is not None, "a mutant declaration mutant_names cannot read from source"
    assert {n for n, lv in names.items() if lv == "component"} == set(load_all())
    assert {n for n, lv in names.items() if lv == "server"} == set(load_server())
    # (a test in the same process may have registered its own ``test:`` target meanwhile)
    assert set(target_names()) == {t for t in targets.available_targets()
                                   if not t.startswith("test:")}
