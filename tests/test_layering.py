"""The import rules of DESIGN.md, really enforced (issue 8, item 5).

``scripts/lint-imports`` checks the import-linter contracts of ``.importlinter`` (grimp sees
relative imports and imports inside functions; third-party rules: oracles, reports and scenarios
import no torch). This module runs it on the repository, proves that deliberate violations of
each kind fail it (and that a renamed or emptied package folder is an error, not a vacuous pass),
and adds what no import statement shows: ``importlib.import_module("swafuzz.<pkg>...")`` strings.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

import pytest
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "lint-imports")
PACKAGES = ("kernels", "targets", "oracles", "scenarios", "harness", "reports", "bench")
# which of our packages each package may name in an import_module string
ALLOWED = {
    "harness": set(PACKAGES),  # the CLI also runs the benchmark (swafuzz.bench.kernels)
    "targets": {"targets", "kernels", "scenarios"},
    "oracles": {"oracles", "scenarios"},
    "reports": {"reports", "scenarios"},
    "scenarios": {"scenarios"},
    "kernels": {"kernels"},
    "bench": {"bench", "kernels", "harness", "scenarios"},  # bench/harness.py runs campaigns
}


def _lint(repo: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, repo], capture_output=True, text=True,
                          timeout=HANG_S)


def test_contracts_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.fixture
def repo_copy(tmp_path):
    dst = tmp_path / "repo"
    dst.mkdir()
    shutil.copytree(os.path.join(ROOT, "swafuzz"), dst / "swafuzz",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, ".importlinter"), dst / ".importlinter")
    return dst


VIOLATIONS = {
    # relative import inside a function: oracles -> targets
    "oracles_relative_in_function": ("swafuzz/oracles/translation.py",
                                     "\n\ndef _sneak():\n    from ..targets import engine\n"),
    # third-party rule: reports import no torch
    "reports_torch": ("swafuzz/reports/dedup.py", "\nimport torch  # noqa\n"),
    # scenarios import no torch device code
    "scenarios_torch_cuda": ("swafuzz/scenarios/payload.py", "\nimport torch.cuda  # noqa\n"),
    # nothing imports the harness except its own CLI
    "targets_harness": ("swafuzz/targets/forward_mode.py", "\nfrom swafuzz.harness import checks  # noqa\n"),
}


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_deliberate_violation_fails(repo_copy, name):
    path, text = VIOLATIONS[name]
    with open(repo_copy / path, "a") as f:
        f.write(text)
    r = _lint(str(repo_copy))
    assert r.returncode == 1, f"{name} was not caught:\n{r.stdout}{r.stderr}"
    assert "BROKEN" in r.stdout


def test_renamed_or_empty_package_is_an_error(repo_copy):
    pkg = repo_copy / "swafuzz"
    os.rename(pkg / "oracles", pkg / "oracle")
    r = _lint(str(repo_copy))
    assert r.returncode == 2 and "oracles/" in r.stderr
    os.rename(pkg / "oracle", pkg / "oracles")
    for f in os.listdir(pkg / "reports"):
        if f.endswith(".py") and f != "__init__.py":
            os.unlink(pkg / "reports" / f)
    r = _lint(str(repo_copy))
    assert r.returncode == 2 and "reports/" in r.stderr


def _module_strings(path):
    """``swafuzz.<pkg>`` packages named by string constants (import_module targets)."""
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts = node.value.split(".")
            if len(parts) >= 2 and parts[0] == "swafuzz" and parts[1] in PACKAGES \
                    and all(p.isidentifier() for p in parts):
                yield parts[1]


@pytest.mark.parametrize("pkg", PACKAGES)
def test_import_module_strings_follow_the_rules(pkg):
    bad = []
    for d, _, names in os.walk(os.path.join(ROOT, "swafuzz", pkg)):
        for n in names:
            if n.endswith(".py"):
                f = os.path.join(d, n)
                bad += [f"{os.path.relpath(f, ROOT)} names swafuzz.{m}"
                        for m in _module_strings(f) if m not in ALLOWED[pkg]]
    assert not bad, bad


def test_module_string_scan_sees_import_module():
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import importlib\nimportlib.import_module('swafuzz.targets.engine')\n")
    try:
        assert list(_module_strings(f.name)) == ["targets"]
    finally:
        os.unlink(f.name)
