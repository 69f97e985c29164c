"""What the GPU gate (``scripts/gpu-check``) would select and skip on the GPU machine, shown on
CPU by simulation (issue 10, item 7). The GPU machine has torch 2.11, triton 3.6, Python 3.12,
no network and nothing installable; the gate runs pytest from the checkout with
``TRITON_INTERPRET`` unset and the marker expression of its ``tests`` step.

The simulation runs that collection in a subprocess with a small plugin that reports, per
selected test, its markers and the skip the run would apply (``skip`` / ``skipif`` marks as
pytest evaluates them at setup), and the deselected tests; once with ``torch.cuda.is_available``
patched to True (the GPU machine) and once as this machine is.
Reproduce: ``pytest tests/harness/test_gpu_gate_selection.py``.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet
from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATE = os.path.join(ROOT, "scripts", "gpu-check")
NOT_ON_GPU = {"install", "zoo", "upstream", "nightly"}  # need network, installs, or hours
# A test whose system tool (a Debian package: chromium, redis-server) is missing skips with this
# reason, on any machine; whether the tool is installed is the machine's business, not the gate's.
SYSTEM_TOOL_SKIP = re.compile(r"is not installed \(Debian package '[\w.+-]+'")

PLUGIN = '''
import json, os
import torch
if os.environ.get("SIM_CUDA") == "1":
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1

DESELECTED = []

def pytest_deselected(items):
    DESELECTED.extend(items)

def _markers(item):
    return sorted({m.name for m in item.iter_markers()})

def pytest_collection_finish(session):
    from _pytest.skipping import evaluate_skip_marks
    sel = []
    for item in session.items:
        sk = evaluate_skip_marks(item)
        sel.append({"id": item.nodeid, "markers": _markers(item),
                    "skip": sk.reason if sk is not None else None})
    desel = [{"id": i.nodeid, "markers": _markers(i)} for i in DESELECTED]
    with open(os.environ["SIM_OUT"], "w") as f:
        json.dump({"selected": sel, "deselected": desel}, f)
'''


def _steps() -> list[tuple[str, int, str]]:
    text = open(GATE).read()
    return [(m[1], int(m[2]), m[3]) for m in
            re.finditer(r"^step\s+(\w+)\s+timeout\s+(\d+)\s+(.*)$", text, re.M)]


def _collect(tmp_path, cuda: bool) -> dict:
    (tmp_path / "simcuda_plugin.py").write_text(PLUGIN)
    expr = re.search(r'-m "([^"]+)"', dict((n, c) for n, _, c in _steps())["tests"])[1]
    out = tmp_path / f"sel-{int(cuda)}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTEST_ADDOPTS")}
    env.update(SIM_CUDA="1" if cuda else "0", SIM_OUT=str(out), CI="1",
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    # --assert=plain: what is selected and skipped does not depend on assertion rewriting,
    # which is most of a collection's time
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p",
                        "simcuda_plugin", "-p", "no:cacheprovider", "--assert=plain", "-m", expr,
                        "tests"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(out.read_text())


def test_gate_steps_fit_in_six_minutes():
    steps = _steps()
    assert [n for n, _, _ in steps] == ["tests", "run", "zoo", "bench"]
    assert sum(t for _, t, _ in steps) <= 360, steps


def test_the_gpu_machine_versions_are_in_the_install_ranges():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert "3.12" in SpecifierSet(re.search(r'requires-python = "([^"]+)"', text)[1])
    assert "2.11.0" in SpecifierSet(re.search(r'"torch([^";]+)"', text)[1])
    assert "3.6.0" in SpecifierSet(re.search(r'"triton([^";]+)[;"]', text)[1])


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu-gate")
    return {"gpu": _collect(d, cuda=True), "cpu": _collect(d, cuda=False)}


def test_install_zoo_upstream_and_nightly_tiers_are_deselected(simulated):
    for side in ("gpu", "cpu"):
        sel, desel = simulated[side]["selected"], simulated[side]["deselected"]
        assert not [t["id"] for t in sel if NOT_ON_GPU & set(t["markers"])]
        assert desel and all(NOT_ON_GPU & set(t["markers"]) for t in desel)
        tiers = set().union(*(set(t["markers"]) & NOT_ON_GPU for t in desel))
        assert {"install", "zoo"} <= tiers, tiers
        assert any("test_zoo_gate" in t["id"] for t in desel)


def test_gpu_tests_run_on_the_gpu_machine_and_skip_here(simulated):
    gpu = [t for t in simulated["gpu"]["selected"]
           if {"gpu", "cudagraph"} & set(t["markers"])]
    assert len(gpu) >= 50
    assert not [(t["id"], t["skip"]) for t in gpu if t["skip"] is not None]
    cpu = {t["id"]: t for t in simulated["cpu"]["selected"]}
    for t in gpu:
        assert "CUDA" in (cpu[t["id"]]["skip"] or ""), t["id"]
    # on the GPU machine nothing is skipped but the opt-in big-memory tier and the tests whose
    # system tool is missing there (the same whichever tools this machine happens to have)
    skipped = [t for t in simulated["gpu"]["selected"] if t["skip"] is not None
               and "bigmem" not in t["markers"] and not SYSTEM_TOOL_SKIP.search(t["skip"])]
    assert not skipped, skipped


def test_system_tool_skips_are_recognised():
    """The reasons tests/harness/test_report.py and test_corpus.py give match the pattern, and
    other skip reasons (CUDA, sglang) do not."""
    for name in ("test_report.py", "test_corpus.py"):
        text = open(os.path.join(ROOT, "tests", "harness", name)).read()
        assert SYSTEM_TOOL_SKIP.search(re.sub(r'"\s*\n\s*"', "", text)), name
    for other in ("needs CUDA", "sglang is not installed (build an environment with "
                  "scripts/upstream-env VERSION)", "allocates > 2 GiB of RAM: run with -m bigmem"):
        assert not SYSTEM_TOOL_SKIP.search(other), other
