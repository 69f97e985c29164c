"""The installed wheel beside another package that owns the top-level name ``kernels``.

Builds swafuzz's wheel, installs it with its dependencies into a fresh venv (its own pip,
``constraints/ci.txt``; the heavy ones found in a lower layer unless
``SWAFUZZ_INSTALL_FRESH_DEPS=1``, see ``conftest.fresh_venv``) that already holds a stand-in
distribution named ``kernels``, then from a
directory outside the checkout, with nothing pointing at the checkout: imports both, runs
``swafuzz list``, a 20-case campaign, ``python -m swafuzz`` and ``swafuzz bench`` with tiny sizes;
uninstalls swafuzz and checks the other package is intact. Then the same with Hugging Face's
``kernels`` 0.14.1 (the version sglang 0.5.23 requires) when the registry serves it.

Reproduce: ``pytest tests/install/test_wheel_install.py`` (about 2 minutes more with
``SWAFUZZ_INSTALL_FRESH_DEPS=1``: the venv installs torch from the local wheel cache).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import CONSTRAINTS, DATA, ROOT, clean_env, sh, venv_python

pytestmark = pytest.mark.install

IMPORT_BOTH = ("import kernels, swafuzz, swafuzz.kernels as sk; "
               "assert sk.__file__ != kernels.__file__; "
               "assert hasattr(sk, 'get_impl') and not hasattr(kernels, 'get_impl'); "
               "print('swafuzz', swafuzz.__version__, swafuzz.__file__); "
               "print('kernels', getattr(kernels, '__version__', '?'), kernels.__file__)")


def _wheel(src: Path, tmp_path: Path, name: str) -> Path:
    """Build ``src``'s wheel with this interpreter's setuptools (no download)."""
    dist = tmp_path / "dist"
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", dist, src], cwd=tmp_path, timeout=600)
    (whl,) = dist.glob(f"{name}-*.whl")
    return whl


def _check_installed(py: Path, work: Path, expect_kernels: str, tag: str) -> None:
    env = clean_env()
    r = sh([py, "-c", IMPORT_BOTH], cwd=work, env=env)
    assert str(work) not in r.stdout and str(ROOT) not in r.stdout, r.stdout
    assert expect_kernels in r.stdout, r.stdout
    r = sh([py, "-c", "import importlib.util as u; print([m for m in ('harness', 'oracles', "
            "'scenarios', 'targets', 'reports', 'bench') if u.find_spec(m)])"], cwd=work, env=env)
    assert r.stdout.strip() == "[]", r.stdout  # nothing of ours at the top level
    swafuzz = py.parent / "swafuzz"
    r = sh([swafuzz, "list"], cwd=work, env=env)
    assert "unified" in r.stdout and "selftest" not in r.stdout
    r = sh([py, "-m", "swafuzz", "run", "--examples", "20", "--impl", "torch", "--quiet",
            "--out", work / f"run-{tag}"], cwd=work, env=env, timeout=900)
    assert "total" in r.stdout
    r = sh([swafuzz, "bench", "--", "--sizes", "64", "--impls", "torch"], cwd=work, env=env)
    assert r.stdout.strip(), r.stderr


def test_wheel_beside_another_kernels_package(fresh_venv: Path, tmp_path: Path):
    whl = _wheel(ROOT, tmp_path, "swafuzz")
    standin = _wheel(DATA / "kernels_standin", tmp_path, "kernels")
    entries = __import__("zipfile").ZipFile(whl).namelist()
    names = {Path(n).name for n in entries}
    tops = {n.split("/", 1)[0] for n in entries if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"swafuzz"}, tops  # the wheel's only top-level name
    work = tmp_path / "elsewhere"
    work.mkdir()
    py = venv_python(fresh_venv)
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", CONSTRAINTS]
    sh([*pip, standin], cwd=work, timeout=600)
    sh([*pip, whl], cwd=work, timeout=1200)
    assert "__init__.py" in names
    _check_installed(py, work, "kernels 0.0.1", "standin")
    sh([py, "-m", "pip", "uninstall", "-y", "-q", "swafuzz"], cwd=work)
    r = sh([py, "-c", "import kernels; print(kernels.STANDIN)"], cwd=work)
    assert "stand-in" in r.stdout
    r = sh([py, "-c", "import swafuzz"], cwd=work, check=False)
    assert r.returncode != 0

    # Hugging Face's kernels hub package, the version sglang 0.5.23 requires
    r = sh([*pip, "kernels==0.14.1"], cwd=work, timeout=600, check=False)
    if r.returncode != 0:
        pytest.skip(f"the registry does not serve kernels==0.14.1 here: {r.stderr[-300:]}")
    sh([*pip, whl], cwd=work, timeout=600)
    _check_installed(py, work, "kernels 0.14.1", "hf")
    sh([py, "-m", "pip", "uninstall", "-y", "-q", "swafuzz"], cwd=work)
    r = sh([py, "-c", "import kernels, importlib.metadata as m; print(m.version('kernels'), "
            "hasattr(kernels, 'get_kernel'))"], cwd=work)
    assert r.stdout.split() == ["0.14.1", "True"], r.stdout
