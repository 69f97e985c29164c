#!/usr/bin/env python3
"""One entry point that works on a fresh machine with only python3.

    python3 bootstrap.py run [swafuzz run options]   # the main job: a default CPU campaign
    python3 bootstrap.py test [pytest options]       # the test suite (the CI gate)
    python3 bootstrap.py install-tier [pytest opts]  # the install tier (.ci/run runs it too)
    python3 bootstrap.py fleet-tier [pytest opts]    # the fleet tier: Ray + Redis (.ci/run too)
    python3 bootstrap.py fleet-env                   # only build/refresh .venv-fleet
    python3 bootstrap.py swafuzz <args>              # any swafuzz command
    python3 bootstrap.py fast-tier NAME [pytest opts] # fast tier in .venv-NAME (constraints/NAME.txt)
    python3 bootstrap.py env                         # only build/refresh .venv; print its python

The first call creates ``.venv`` next to this file and installs swafuzz into it (editable) with
the project's tested set pinned by ``constraints/ci.txt`` (torch 2.13.0 CPU, triton 3.6.0, numpy,
hypothesis, pytest, pytest-xdist, ruff, import-linter, redis, coverage); later calls reuse it until
``pyproject.toml`` or the constraints change. Without a GPU, TRITON_INTERPRET=1 is set so Triton kernels run in the
interpreter.

``test`` runs every tier but ``nightly``, ``upstream`` and ``install``; the install tier
(``tests/install``: the built wheel and a plugin package pip-installed into fresh venvs, about
90 s of CPU mostly spent unpacking torch again) is ``install-tier``, which ``.ci/run`` runs
beside its upstream step, so CI still proves it. So is ``fleet-tier``: ``tests/fleet`` (a real
Ray cluster of three ``ray start`` nodes and a Redis server on this machine, a worker node killed
with ``kill -9`` mid-run) in ``.venv-fleet``, a layer over ``.venv`` (a ``.pth`` file) that adds
``ray`` (the ``swafuzz[ray]`` extra, pinned to :data:`FLEET_RAY`), about 2 minutes.
``SWAFUZZ_BASE_VENV`` makes another venv the layer's base (a worktree without its own .venv).
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
                           "-c", CONSTRAINTS, "-e", ROOT + "[lint,redis,coverage]"])
    with open(STAMP, "w") as f:
        f.write("ok\n")


FLEET_RAY = "ray==2.60.0"  # the release the fleet tier proves (pyproject: ray>=2.60,<3)
TEST_TIER = "not nightly and not upstream and not install"
FAST_TIER = "not nightly and not upstream and not install and not zoo"


def fast_tier(name: str, rest: list[str]) -> int:
    """The fast tier of the CPU gate in ``.venv-NAME``, installed with ``constraints/NAME.txt``."""
    cons = os.path.join(ROOT, "constraints", f"{name}.txt")
    if not name.replace("-", "").isalnum() or not os.path.isfile(cons):
        names = sorted(f[:-4] for f in os.listdir(os.path.join(ROOT, "constraints"))
                       if f.endswith(".txt"))
        print(f"bootstrap: fast-tier NAME: {name!r} has no constraints/NAME.txt; choose one of: "
              f"{', '.join(names)}", file=sys.stderr)
        return 2
    venv_dir = os.path.join(ROOT, f".venv-{name}")
    py = os.path.join(venv_dir, "bin", "python")
    stamp = os.path.join(venv_dir, ".swafuzz-installed")
    inputs = [os.path.join(ROOT, "pyproject.toml"), cons]
    if not (os.path.exists(stamp) and all(os.path.getmtime(stamp) >= os.path.getmtime(f)
                                          for f in inputs)):
        if not os.path.exists(py):
            print(f"bootstrap: creating .venv-{name}", flush=True)
            venv.EnvBuilder(with_pip=True).create(venv_dir)
        print(f"bootstrap: installing swafuzz with constraints/{name}.txt into .venv-{name}",
              flush=True)
        subprocess.check_call([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               "-c", cons, "-e", ROOT + "[lint,redis,coverage]"])
        with open(stamp, "w") as f:
            f.write("ok\n")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("CI", "1")
    subprocess.call([py, "-c", "import torch, triton; print('fast tier on torch', "
                     "torch.__version__, 'triton', triton.__version__)"], env=env)
    return subprocess.call([py, "-m", "pytest", "-q", "-n", "2", "-m", FAST_TIER, *rest],
                           cwd=ROOT, env=env)


def fleet_env() -> str:
    """Build (or reuse) ``.venv-fleet``: the base venv plus ray; return its python."""
    base = os.environ.get("SWAFUZZ_BASE_VENV")
    if not base:
        ensure_env()
    base_py = os.path.join(base, "bin", "python") if base else PY
    site_dir = subprocess.check_output([base_py, "-c", "import sysconfig; "
                                        "print(sysconfig.get_paths()['purelib'])"], text=True)
    venv_dir = os.path.join(ROOT, ".venv-fleet")
    py = os.path.join(venv_dir, "bin", "python")
    stamp = os.path.join(venv_dir, ".swafuzz-installed")
    key = f"{FLEET_RAY} over {site_dir.strip()}\n"
    if not (os.path.exists(stamp) and open(stamp).read() == key):
        print(f"bootstrap: building .venv-fleet ({FLEET_RAY} over {base or '.venv'})", flush=True)
        subprocess.check_call([base_py, "-m", "venv", "--clear", "--without-pip", venv_dir])
        own = subprocess.check_output([py, "-c", "import sysconfig; "
                                       "print(sysconfig.get_paths()['purelib'])"], text=True)
        with open(os.path.join(own.strip(), "zz-swafuzz-base.pth"), "w") as f:
            f.write(f"import site; site.addsitedir({site_dir.strip()!r})\n")
        subprocess.check_call([base_py, "-m", "pip", "--python", py, "install", "-q",
                               "--disable-pip-version-check", FLEET_RAY])
        with open(stamp, "w") as f:
            f.write(key)
    return py


def fleet_tier(rest: list[str]) -> int:
    """``tests/fleet`` in ``.venv-fleet`` (:func:`fleet_env`)."""
    py = fleet_env()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("CI", "1")
    # test_seed_only needs no ray and runs in the suite (`test`) already, the same work
    return subprocess.call([py, "-m", "pytest", "-q", "tests/fleet",
                            "--ignore=tests/fleet/test_seed_only.py", *rest], cwd=ROOT, env=env)


def main(argv: list[str]) -> int:
    if argv[:1] == ["fast-tier"] and len(argv) >= 2:
        return fast_tier(argv[1], argv[2:])
    if argv[:1] == ["fleet-tier"]:
        return fleet_tier(argv[1:])
    if argv == ["fleet-env"]:
        print(fleet_env())
        return 0
    if not argv or argv[0] not in ("run", "test", "install-tier", "swafuzz", "env"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ensure_env()
    if argv[0] == "env":
        print(PY)
        return 0
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        args = [PY, "-m", "swafuzz", "run", *rest]
    elif cmd == "swafuzz":
        args = [PY, "-m", "swafuzz", *rest]
    elif cmd == "test":
        env.setdefault("CI", "1")
        args = [PY, "-m", "pytest", "-q", "-n", "2", "-m", TEST_TIER, *rest]
    else:  # install-tier: one process (its tests are pip and venv work, little to share out)
        env.setdefault("CI", "1")
        args = [PY, "-m", "pytest", "-q", "-m", "install", "tests/install", *rest]
    # run / swafuzz: in the caller's directory, so relative paths (--out, --db, report DIR, a
    # bundle for repro) mean what they mean where the user typed them; the tests run from ROOT
    tests = cmd in ("test", "install-tier")
    return subprocess.call(args, cwd=ROOT if tests else os.getcwd(), env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
