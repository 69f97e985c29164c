"""The known-failure ledger ships in the wheel (issue 19 defect 1).

Installed from a wheel, ``swafuzz report DIR`` exited 2 (``--ledger: .../known_failures.json:
cannot read ledger``) and ``run --ledger auto`` ran with no ledger at all: the ledger lived only
in the repository. It is package data now (``swafuzz/ledger/known_failures.json``, in the
checkout a link to ``ledger/known_failures.json``). This builds the wheel, checks the file in it
is the repository's ledger itself (not a link), installs the wheel without dependencies into
an overlay venv (torch from this environment) and, from a directory outside the checkout, finds
the ledger where swafuzz looks for it, runs a small campaign and reports on it.

Reproduce: ``pytest tests/install/test_ledger_in_wheel.py`` (about 30 s).
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, pip_into, sh, venv_python

pytestmark = pytest.mark.install

LEDGER = ROOT / "ledger" / "known_failures.json"


def test_wheel_ships_the_ledger_and_report_reads_it(overlay_venv: Path, tmp_path: Path):
    dist = tmp_path / "dist"
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", dist, ROOT], cwd=tmp_path, timeout=600)
    (whl,) = dist.glob("swafuzz-*.whl")
    with zipfile.ZipFile(whl) as z:
        assert z.read("swafuzz/ledger/known_failures.json") == LEDGER.read_bytes()
    pip_into(overlay_venv, "--no-deps", "--no-build-isolation", whl, cwd=tmp_path)
    py, work = venv_python(overlay_venv), tmp_path / "elsewhere"
    work.mkdir()
    r = sh([py, "-c", "import json, os, swafuzz; from swafuzz.harness.ledger.entries import "
            "DEFAULT_LEDGER as p, load_ledger; print(json.dumps([swafuzz.__file__, p, "
            "os.path.isfile(p), len(load_ledger(p))]))"], cwd=work)
    where, path, there, entries = json.loads(r.stdout)
    assert where.startswith(str(overlay_venv)) and path.startswith(str(overlay_venv)), r.stdout
    assert there and entries == len(json.loads(LEDGER.read_text())["entries"])
    out = work / "o"
    sh([py, "-m", "swafuzz", "run", "--scenario", "decode", "--examples", "3", "--impl", "torch",
        "--no-isolate", "--quiet", "--ledger", "auto", "--out", out], cwd=work)
    r = sh([py, "-m", "swafuzz", "report", out], cwd=work, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cannot read ledger" not in r.stderr
