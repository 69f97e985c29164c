"""The stored exports against SGLang releases (``upstream``; scripts/upstream-check runs it):

* each export regenerates identically here too (``test_export.py``'s check, in the release env);
* every SGLang function an export names (``module:qualname``) exists in the release it failed on,
  where that release is the installed one;
* each exported test file, run as a maintainer would (a fresh interpreter, ``pytest FILE``, its
  directory as the only other path: it imports sglang alone), FAILS on the release it failed on
  and, where the export carries the fix (``fix.json``, applied by ``tests/support/sglang_fix.py``),
  passes with it; on the release a bisect record says fixed it, it passes. A release other than
  the installed one runs in its layered environment (``SWAFUZZ_UPSTREAM_DIR/.venv-sglang-V``,
  scripts/upstream-env) where one is built, else that part is skipped (said why). Under
  scripts/upstream-ci (``SWAFUZZ_UPSTREAM_RELEASES``: the releases it checks, each in its own
  upstream-check) a release's runs happen once, in that release's check, and those of a release
  it does not check in the newest one's: the same runs were repeated in every release's check.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from swafuzz.harness.ledger.when import release_of
from swafuzz.targets.sglang.releases import release_key

pytestmark = pytest.mark.upstream
sglang = pytest.importorskip("sglang")

ROOT = Path(__file__).resolve().parents[2]
EXPORTS = ROOT / "tests" / "data" / "exports"
FIXER = ROOT / "tests" / "support" / "sglang_fix.py"
INSTALLED = release_of(importlib.metadata.version("sglang"))


def _entries() -> list[str]:
    return sorted(p.name for p in EXPORTS.iterdir() if p.is_dir())


def _meta(entry: str) -> dict:
    return json.loads((EXPORTS / entry / "export.json").read_text())


def _python(release: str) -> str | None:
    if release == INSTALLED:
        return sys.executable
    base = Path(os.environ.get("SWAFUZZ_UPSTREAM_DIR", ROOT))
    py = base / f".venv-sglang-{release}" / "bin" / "python"
    return str(py) if py.exists() else None


def _runs_here(release: str) -> bool:
    """Whether this process runs the exported tests on ``release``: always on a hand run; under
    scripts/upstream-ci only in the check of ``release`` itself, or of the newest release it
    checks when it does not check ``release``."""
    ci = os.environ.get("SWAFUZZ_UPSTREAM_RELEASES", "").split()
    if not ci or INSTALLED not in ci:
        return True
    return INSTALLED == (release if release in ci else max(ci, key=release_key))


def _run(py: str, tests: list[Path], tmp_path: Path, fix: Path | None = None) -> dict[str, str]:
    """Run the test files in a fresh interpreter: ``{file: "passed" | "failed"}`` (a file
    passes when all its tests do) from the junit report."""
    xml = tmp_path / f"junit-{len(list(tmp_path.glob('junit-*')))}.xml"
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--import-mode=importlib",
            "-W", "ignore", f"--junitxml={xml}", "-o", "addopts=", *map(str, tests)]
    cmd = [py, str(FIXER), str(fix)] if fix else [py, "-m", "pytest"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWAFUZZ_PLUGINS")}
    env["TRITON_INTERPRET"] = "1"
    r = subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert xml.exists(), f"pytest wrote no report (exit {r.returncode}): {r.stdout[-2000:]}"
    out: dict[str, str] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        f = str(next(t for t in tests if t.stem in case.get("classname", "")))
        bad = any(c.tag in ("failure", "error") for c in case)
        out[f] = "failed" if bad or out.get(f) == "failed" else "passed"
        assert not any(c.tag == "error" for c in case), f"{f}: error, not a failure: {r.stdout}"
    assert len(out) == len(tests), (out, r.stdout[-3000:])
    return out


def _test_file(entry: str, where: Path) -> Path:
    """The entry's exported test, copied under a name of its own (two exports may share a
    file name; pytest's report names a test by its module)."""
    dst = where / f"test_{entry.replace('-', '_')}.py"
    dst.write_bytes((EXPORTS / entry / _meta(entry)["test_file"]).read_bytes())
    return dst


@pytest.mark.parametrize("entry", _entries())
def test_export_regenerates_identically_here(tmp_path, entry, monkeypatch):
    from swafuzz.harness.cli.commands import main

    monkeypatch.chdir(ROOT)
    bis = EXPORTS / entry / "bisect.json"
    code = main(["export", _meta(entry)["bundle"], "--out", str(tmp_path / "x")]
                + (["--bisect", str(bis)] if bis.exists() else []))
    assert code == 0
    for name in os.listdir(tmp_path / "x"):
        assert (tmp_path / "x" / name).read_bytes() == (EXPORTS / entry / name).read_bytes()


@pytest.mark.parametrize("entry", _entries())
def test_named_functions_exist_in_the_release(entry):
    meta = _meta(entry)
    if meta["releases"]["release"] != INSTALLED:
        pytest.skip(f"{entry} failed on sglang {meta['releases']['release']}; "
                    f"installed: {INSTALLED}")
    for ref in meta["recipe"]["functions"]:
        module, qual = ref.split(":")
        obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
        assert callable(obj), ref


def test_exported_tests_fail_on_their_release_and_pass_fixed(tmp_path):
    runs: dict[tuple[str, str | None], list[Path]] = {}  # (release, fix) -> files expected
    expect: dict[tuple[str, str, str | None], str] = {}
    skipped = []
    fixes: dict[str, str] = {}  # fix.json text -> the first file holding it
    (tmp_path / "tests").mkdir()
    for entry in _entries():
        meta = _meta(entry)
        rel, f = meta["releases"], _test_file(entry, tmp_path / "tests")
        plan = [(rel["release"], None, "failed")]
        if meta["fix_file"]:  # exports with the same fix share one run
            fix = (EXPORTS / entry / meta["fix_file"]).read_text()
            plan.append((rel["release"], fixes.setdefault(fix, str(EXPORTS / entry /
                                                                   meta["fix_file"])), "passed"))
        if rel.get("fixed_in"):
            plan.append((rel["fixed_in"], None, "passed"))
        for release, fix, want in plan:
            if not _runs_here(release):
                skipped.append(f"{entry} on {release}: in that release's upstream-check")
                continue
            if _python(release) is None:
                skipped.append(f"{entry} on {release}: no environment")
                continue
            runs.setdefault((release, fix), []).append(f)
            expect[(str(f), release, fix)] = want
    if not runs and all(s.endswith("upstream-check") for s in skipped):
        pytest.skip(f"every run is another release's: {'; '.join(skipped)}")
    assert runs, f"no export could run here: {skipped}"
    for (release, fix), files in runs.items():
        got = _run(_python(release), files, tmp_path, Path(fix) if fix else None)
        for f in files:
            assert got[str(f)] == expect[(str(f), release, fix)], (
                f"{f} on sglang {release}" + (" with its fix" if fix else "") +
                f": {got[str(f)]}, expected {expect[(str(f), release, fix)]}")
    if skipped:
        print("not run:", "; ".join(skipped))
