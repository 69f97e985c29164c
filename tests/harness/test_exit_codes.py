"""Exit codes 2 (bad input, named field, nothing written) and 3 (tool failure: one line on
stderr, the traceback in swafuzz-error.log under the output directory)."""

import json
import os
import subprocess
import sys

import pytest

from swafuzz.harness.cli.commands import main
from swafuzz.harness.report import read as report_mod


@pytest.mark.parametrize("args,field", [
    (["--seeds", "0"], "--seeds"),
    (["--seeds", "-2"], "--seeds"),
    (["--examples", "0"], "--examples"),
    (["--jobs", "0"], "--jobs"),
    (["--budget", "ci", "--seeds", "3"], "--seeds: not allowed with --budget ci"),
    (["--budget", "ci", "--examples", "9"], "--examples: not allowed with --budget ci"),
])
def test_zoo_counts_validated_before_running(tmp_path, capsys, args, field):
    out = tmp_path / "zoo"
    assert main(["zoo", *args, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_zoo_json_checked_up_front(tmp_path, capsys):
    out = tmp_path / "zoo"
    assert main(["zoo", "--json", str(tmp_path / "no" / "zoo.json"), "--out", str(out)]) == 2
    assert "--json" in capsys.readouterr().err and not out.exists()
    assert main(["zoo", "--json", str(tmp_path), "--out", str(out)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_run_out_is_a_file_or_shrink_budget_negative(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["run", "--out", str(f), "--examples", "1"]) == 2
    assert "--out" in capsys.readouterr().err and f.read_text() == "x"
    assert main(["run", "--out", str(tmp_path / "o"), "--shrink-budget", "-1"]) == 2
    assert "--shrink-budget" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_tool_failure_exit_3_with_log(tmp_path, capsys, monkeypatch):
    (tmp_path / "run.json").write_text("{}")

    def broken(*a, **k):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(report_mod, "build", broken)
    assert main(["report", str(tmp_path)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tool failure: RuntimeError: disk on fire" in err
    log = (tmp_path / "swafuzz-error.log").read_text()
    assert "Traceback" in log and "disk on fire" in log and str(tmp_path) in err


def test_broken_feature_folder_is_a_tool_failure(tmp_path):
    """A feature folder without a record fails the registry while the CLI loads (the Case
    schema reads it): one line naming the folder, exit 3, no traceback on stderr."""
    _broken_feature_folder_fails(tmp_path, "list", (
        "import sys, swafuzz.features as f; f.__path__.append(sys.argv[1]); "
        "sys.argv = ['swafuzz', 'list']; from swafuzz.__main__ import entry; "
        "sys.exit(entry())"))


def _broken_feature_folder_fails(tmp_path, cmd: str, code: str) -> None:
    """``code`` run with a feature folder holding no record added to the registry's path:
    exit 3 and one line naming the folder, no traceback."""
    (tmp_path / "zz_broken").mkdir()
    (tmp_path / "zz_broken" / "__init__.py").write_text("X = 1\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, env=env, timeout=3600)
    err = r.stderr.strip()
    assert r.returncode == 3, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"swafuzz {cmd}: tool failure: RecordError: " in err and "zz_broken" in err


def test_list_features_with_target_is_a_usage_error(capsys):
    assert main(["list", "--target", "sglang", "--features", "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--features: not with --target" in err, err


@pytest.mark.parametrize("text", ['{}', '[]', '{"config": {"x": 1}}'])
def test_resume_run_json_without_config_is_a_usage_error(tmp_path, capsys, text):
    (tmp_path / "run.json").write_text(text)
    assert main(["run", "--resume", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--resume:" in err and "run.json" in err, err
    assert not (tmp_path / "swafuzz-error.log").exists()


def test_repro_bundle_target_not_a_string_is_a_usage_error(tmp_path, capsys):
    data = os.path.join(os.path.dirname(__file__), "..", "data", "bundles")
    with open(os.path.join(data, "host_baked_translation.json")) as f:
        b = json.load(f)
    b["target"] = 5
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["repro", str(tmp_path / "b.json"), "--no-isolate"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "field 'target' must be a string" in err, err


# --------------------------------------------------------------------------- issue 19, 10
def _bundle(tmp_path, name="b.json", **change):
    data = os.path.join(os.path.dirname(__file__), "..", "data", "bundles")
    with open(os.path.join(data, "host_baked_translation.json")) as f:
        b = json.load(f)
    kind = change.pop("case_kind", None)
    if kind is not None:
        b["case"]["kind"] = kind
    b.update(change)
    path = tmp_path / name
    path.write_text(json.dumps(b))
    return str(path)


@pytest.mark.parametrize("change,expect", [
    ({"bundle_version": 99}, "field 'bundle_version': 99 is not supported; supported: 1"),
    ({"bundle_version": "1"}, "field 'bundle_version': '1' is not supported"),
    ({"plugin": "x"}, "field 'plugin' must be null or an object"),
    ({"plugin": {"module": 5}}, "field 'plugin' must be null or an object"),
    ({"case_kind": "nosuch"}, "case.kind: 'nosuch' is not a scenario kind; allowed: custom"),
])
def test_repro_bad_bundle_fields_are_usage_errors(tmp_path, capsys, change, expect):
    path = _bundle(tmp_path, **change)
    assert main(["repro", path, "--no-isolate"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expect in err and path in err, err
    if "case_kind" in change:  # the allowed kinds are listed
        assert "decode" in err and "spec_remap" in err, err


def test_repro_binary_bundle_names_the_file(tmp_path, capsys):
    path = tmp_path / "bin.json"
    path.write_bytes(bytes(range(256)))
    assert main(["repro", str(path), "--no-isolate"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "not UTF-8" in err, err


def test_bundle_without_version_and_custom_case_still_replay(tmp_path, capsys):
    path = _bundle(tmp_path, case_kind="custom")
    b = json.loads(open(path).read())
    del b["bundle_version"]
    open(path, "w").write(json.dumps(b))
    assert main(["repro", path, "--no-isolate"]) == 1  # the mutant's finding, replayed
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("cmd", ["run", "zoo"])
@pytest.mark.parametrize("out,why", [("", "an empty path is not allowed"),
                                     ("/proc/x", "")])
def test_out_that_cannot_be_created_is_a_usage_error(tmp_path, capsys, cmd, out, why):
    args = ["run", "--examples", "1"] if cmd == "run" else ["zoo", "--quiet"]
    assert main([*args, f"--out={out}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--out: {why}" in err and out in err, err


def test_resume_of_a_file_names_resume(tmp_path, capsys):
    f = tmp_path / "f.json"
    f.write_text("{}")
    assert main(["run", "--resume", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("swafuzz run: error: --resume: ") and "not a directory" in err, err


def test_ledger_module_with_a_broken_feature_folder_is_a_tool_failure(tmp_path):
    """``python -m swafuzz.harness.ledger.entries`` as the console script: one line, exit 3."""
    _broken_feature_folder_fails(tmp_path, "ledger", (
        "import runpy, sys, swafuzz.features as f; f.__path__.append(sys.argv[1]); "
        "sys.argv = ['ledger', sys.argv[1]]; "
        "runpy.run_module('swafuzz.harness.ledger.entries', run_name='__main__', alter_sys=True)"))
