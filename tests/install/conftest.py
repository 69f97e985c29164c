"""Helpers for the install tier: real virtual environments, real pip installs, commands run from
a directory outside the checkout. Each test here builds its own venv under ``tmp_path``.

The heavy dependencies (torch, triton, numpy) are not unpacked again by default: a venv sees
them through a lower layer, this interpreter's site-packages (``overlay_venv``), or a view of it
without swafuzz (``fresh_venv``). ``SWAFUZZ_INSTALL_FRESH_DEPS=1`` (tox ``install``) makes
``fresh_venv`` a bare venv into which pip installs every dependency from the registry (about
2 minutes more, mostly unpacking torch; ``.ci/run``'s ``bootstrap.py env`` installs the same
pinned set from nothing on its fresh clone)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CONSTRAINTS = ROOT / "constraints" / "ci.txt"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that points Python at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SWAFUZZ_PLUGINS", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def sh(args: list[str], cwd: Path, timeout: int = 600, env: dict[str, str] | None = None,
       check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=env or clean_env())
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} -> {r.returncode}\n"
                             f"stdout:\n{r.stdout[-4000:]}\nstderr:\n{r.stderr[-4000:]}")
    return r


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip_into(venv: Path, *args: str, cwd: Path, timeout: int = 900) -> None:
    """``pip install`` into ``venv`` with this interpreter's pip (``pip --python``)."""
    sh([sys.executable, "-m", "pip", "--python", venv_python(venv), "install", "-q",
        "--disable-pip-version-check", *args], cwd=cwd, timeout=timeout)


FRESH_DEPS = os.environ.get("SWAFUZZ_INSTALL_FRESH_DEPS") == "1"


def base_view(dest: Path) -> Path:
    """``dest``: a directory of links to every entry of this interpreter's site-packages except
    swafuzz's own (its dist-info, the editable install's ``.pth`` and finder) and pip's, so a
    venv layered over it resolves and imports torch, triton and numpy as installed here, while
    ``swafuzz`` is importable only once installed into the venv itself."""
    base = Path(sysconfig.get_paths()["purelib"])
    dest.mkdir()
    for entry in base.iterdir():
        low = entry.name.lower()
        if "swafuzz" in low or low == "pip" or low.startswith("pip-"):
            continue
        (dest / entry.name).symlink_to(entry)
    return dest


@pytest.fixture
def fresh_venv(tmp_path: Path) -> Path:
    """A new venv with its own pip (``python -m venv``) for a wheel installed *with* its
    dependencies: layered over :func:`base_view` (pip finds the pinned torch, triton, numpy,
    hypothesis, pytest there and checks them against the wheel's requirements and
    ``constraints/ci.txt`` instead of unpacking them again), or bare with
    ``SWAFUZZ_INSTALL_FRESH_DEPS=1``."""
    venv = tmp_path / "venv"
    sh([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    if not FRESH_DEPS:
        view = base_view(tmp_path / "base-view")
        site = sh([venv_python(venv), "-c", "import sysconfig; "
                   "print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path).stdout.strip()
        Path(site, "zz_base_view.pth").write_text(
            f"import site; site.addsitedir({str(view)!r})\n")
    return venv


@pytest.fixture
def overlay_venv(tmp_path: Path) -> Path:
    """A new venv (no pip of its own) that sees this interpreter's site-packages through a
    ``.pth`` (torch, triton and swafuzz as installed here), so packages installed into it are
    real installs with real metadata while the heavy dependencies are not installed again."""
    venv = tmp_path / "venv"
    sh([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    site = sh([venv_python(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
              cwd=tmp_path).stdout.strip()
    Path(site, "zz_base_site.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return venv
