"""Helpers for the install tier: real virtual environments, real pip installs, commands run from
a directory outside the checkout. Each test here builds its own venv under ``tmp_path``."""

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
