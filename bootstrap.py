#!/usr/bin/env python3
"""One entry point that works on a fresh machine with only python3.

    python3 bootstrap.py run [swafuzz run options]   # the main job: a default CPU campaign
    python3 bootstrap.py test [pytest options]       # the test suite (the CI gate)
    python3 bootstrap.py swafuzz <args>              # any swafuzz command

The first call creates ``.venv`` next to this file and installs swafuzz into it (editable) with
the project's tested set pinned by ``constraints/ci.txt`` (torch 2.13.0 CPU, triton 3.6.0, numpy,
hypothesis, pytest, pytest-xdist, ruff, import-linter, redis); later calls reuse it until
``pyproject.toml`` or the constraints change. Without a GPU, TRITON_INTERPRET=1 is set so Triton kernels run in the
interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(ROOT, ".venv")
PY = os.path.join(VENV, "bin", "python")
STAMP = os.path.join(VENV, ".swafuzz-installed")
CONSTRAINTS = os.path.join(ROOT, "constraints", "ci.txt")


def ensure_env() -> None:
    inputs = [os.path.join(ROOT, "pyproject.toml"), CONSTRAINTS]
    if os.path.exists(STAMP) and all(os.path.getmtime(STAMP) >= os.path.getmtime(f)
                                     for f in inputs):
        return
    if not os.path.exists(PY):
        print("bootstrap: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("bootstrap: installing swafuzz and its pinned dependencies into .venv", flush=True)
    subprocess.check_call([PY, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "-c", CONSTRAINTS, "-e", ROOT + "[lint,redis]"])
    with open(STAMP, "w") as f:
        f.write("ok\n")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "swafuzz"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ensure_env()
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        args = [PY, "-m", "swafuzz", "run", *rest]
    elif cmd == "swafuzz":
        args = [PY, "-m", "swafuzz", *rest]
    else:
        env.setdefault("CI", "1")
        args = [PY, "-m", "pytest", "-q", "-n", "2", "-m", "not nightly and not upstream",
                *rest]
    # run / swafuzz: in the caller's directory, so relative paths (--out, --db, report DIR, a
    # bundle for repro) mean what they mean where the user typed them; the tests run from ROOT
    return subprocess.call(args, cwd=ROOT if cmd == "test" else os.getcwd(), env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
