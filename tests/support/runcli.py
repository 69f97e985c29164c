"""Helpers shared by the run-pipeline tests (``tests/harness/test_pipeline.py``,
``tests/harness/test_run_robustness.py``): the CLI in-process or in a subprocess, without the
caller's ``SWAFUZZ_PLUGINS``, and a run directory's case log.

Imported as ``support.runcli`` (``tests/`` is on ``sys.path``: the suite's conftest lives there).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time

from swafuzz.harness.cli.commands import main

#: a hang guard for a subprocess a test waits on: far beyond any working run however loaded the
#: machine, so that no test passes or fails by the clock (issue 27)
HANG_S = 3600

#: the environment of a CLI subprocess: this one's without SWAFUZZ_PLUGINS
ENV = {k: v for k, v in os.environ.items() if k != "SWAFUZZ_PLUGINS"}


def cli_caller(capsys, monkeypatch):
    """The body of a ``cli`` fixture: ``cli(*args) -> (exit code, stdout, stderr)``, the CLI
    in-process (:func:`swafuzz.harness.cli.commands.main`, what ``python -m swafuzz`` exits with), so a
    refusal does not pay an interpreter and a torch import."""
    monkeypatch.delenv("SWAFUZZ_PLUGINS", raising=False)

    def call(*args):
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return code, cap.out, cap.err
    return call


def swafuzz(*args, timeout=600):
    """``python -m swafuzz ARGS`` in a subprocess (``ENV``)."""
    return subprocess.run([sys.executable, "-m", "swafuzz", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


def wait_until(cond, proc, poll_s: float = 0.2) -> None:
    """Poll ``cond()`` until it holds or ``proc`` has ended (then the test's own assertions say
    why); no wall-clock limit but the hang guard :data:`HANG_S`."""
    end = time.monotonic() + HANG_S
    while proc.poll() is None and not cond() and time.monotonic() < end:
        time.sleep(poll_s)


def log_rows(out):
    """Every row of ``out/cases.jsonl``."""
    with open(out / "cases.jsonl") as f:
        return [json.loads(x) for x in f]


def case_rows(out):
    """The case rows of ``out/cases.jsonl`` (not the unit rows)."""
    return [r for r in log_rows(out) if "case" in r]


def cases_by_unit(out):
    """unit id -> its Cases as canonical JSON, in log order."""
    units: dict[str, list[str]] = {}
    for r in case_rows(out):
        units.setdefault(r["unit"], []).append(json.dumps(r["case"], sort_keys=True))
    return units


def assert_no_duplicates(out):
    """No Case of a unit is recorded twice (a resume answers logged Cases, never reruns them)."""
    keys = collections.Counter((r["unit"], json.dumps(r["case"], sort_keys=True))
                               for r in case_rows(out))
    dups = [k for k, n in keys.items() if n > 1]
    assert not dups, f"{len(dups)} cases recorded twice"
