"""The import direction of DESIGN.md, enforced: harness -> scenarios, oracles, targets, reports
(and kernels.launch); targets -> kernels, scenarios (the Case); oracles and reports -> only
scenarios; scenarios and kernels -> nothing of ours (kernels: only itself). Oracles never import
torch (plain Python truth)."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = {"harness", "oracles", "scenarios", "kernels", "reports", "targets"}
ALLOWED = {
    "harness": {"harness", "scenarios", "oracles", "targets", "reports", "kernels"},
    "targets": {"targets", "kernels", "scenarios"},
    "oracles": {"oracles", "scenarios"},
    "reports": {"reports", "scenarios"},
    "scenarios": {"scenarios"},
    "kernels": {"kernels"},
}


def _imports(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def _files(pkg):
    for d, _, names in os.walk(os.path.join(ROOT, pkg)):
        for n in names:
            if n.endswith(".py"):
                yield os.path.join(d, n)


@pytest.mark.parametrize("pkg", sorted(ALLOWED))
def test_import_direction(pkg):
    bad = []
    for f in _files(pkg):
        for mod in _imports(f):
            if mod in OURS and mod not in ALLOWED[pkg]:
                bad.append(f"{os.path.relpath(f, ROOT)} imports {mod}")
            if pkg == "oracles" and mod in ("torch", "numpy", "triton"):
                bad.append(f"{os.path.relpath(f, ROOT)} imports {mod} (oracles are plain Python)")
    assert not bad, bad


def test_harness_uses_only_the_launch_hook_and_registry_of_kernels():
    for f in _files("harness"):
        src = open(f).read()
        for line in src.splitlines():
            s = line.strip()
            if s.startswith(("from kernels", "import kernels")):
                # the launch hook (tape) and the registry of implementations (CLI) only
                assert "launch" in s or "available_impls" in s, f"{f}: {s}"
