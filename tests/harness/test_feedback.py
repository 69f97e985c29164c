"""Feedback a user gets: ``--version``, defaults in ``--help``, progress lines on a non-terminal
stderr, the output directory printed at the end, and bootstrap resolving a relative ``--out``
against the caller's directory."""

import os
import subprocess
import sys

from swafuzz import __version__
from swafuzz.harness.cli.commands import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip().startswith(f"swafuzz {__version__} (python ")


def test_help_shows_defaults(capsys):
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("default: 300", "swafuzz-out/run-", "(default: unified)",
                 "(default: 150)", "default: OUT/.hypothesis-db"):
        assert text in out, text
    assert main(["zoo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default: 200" in out and "default: 5" in out and "(default: full)" in out


def test_progress_lines_when_stderr_is_not_a_terminal_and_out_dir_printed(tmp_path):
    """Through bootstrap, from another directory, with a relative --out: the results land under
    the caller's directory, stderr (a pipe) gets 'progress:' lines, stdout names the directory."""
    env = dict(os.environ, SWAFUZZ_PROGRESS_S="0")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bootstrap.py"), "swafuzz", "run",
                        "--examples", "2", "--impl", "torch", "--no-isolate", "--scenario",
                        "idle", "--db", "none", "--out", "rel-out"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "rel-out" / "cases.jsonl").exists()
    assert not os.path.exists(os.path.join(ROOT, "rel-out"))
    assert f"results: {tmp_path / 'rel-out'}" in r.stdout
    assert "progress:" in r.stderr and "cases run" in r.stderr
    assert "\r" not in r.stderr  # no terminal bar in a log
