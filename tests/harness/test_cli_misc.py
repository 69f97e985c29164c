"""The CLI's small promises (issue 19): ``--version`` names the stack without importing it."""

import os
import subprocess
import sys
from importlib import metadata

from swafuzz import __version__

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT)


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def test_version_names_torch_triton_and_sglang_without_importing_them():
    code = ("import sys; sys.argv = ['swafuzz', '--version']\n"
            "from swafuzz.__main__ import entry\n"
            "try:\n    entry()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('loaded:', sorted(m for m in ('torch', 'triton', 'sglang') "
            "if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV,
                       timeout=3600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    first, loaded = r.stdout.strip().splitlines()
    assert first.startswith(f"swafuzz {__version__} (python "), first
    for dist in ("torch", "triton", "hypothesis"):
        assert f"{dist} {_installed(dist) or 'not installed'}" in first, first
    sg = _installed("sglang")
    assert (f"sglang {sg}" in first) if sg else ("sglang" not in first), first
    assert loaded == "loaded: []", loaded
