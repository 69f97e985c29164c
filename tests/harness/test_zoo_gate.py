"""CI gate for the bug zoo: every mutant is killed, the control is clean, and the leave-one-out
rule holds: every check is the only check that kills at least one mutant (its killing Case,
rerun with that check disabled, passes), or it is listed as defence in depth
(``defence=`` of its ``@check``, reason printed by the gate) and still fires on a mutant.

Runs ``swafuzz zoo --budget ci`` (2 seeds, 60 cases per mutant and seed; engine-level mutants on
the torch path, kernel-level ones on the Triton interpreter) and reads its ``--json`` matrix.
Reproduce: ``python -m swafuzz zoo --budget ci``; the full matrix: ``python -m swafuzz zoo``.
"""

import json
import os
import subprocess
import sys

import pytest

from swafuzz.harness.check_registry import check_names, defence_in_depth

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.zoo
def test_zoo_ci_budget(tmp_path):
    out = tmp_path / "zoo.json"
    r = subprocess.run([sys.executable, "-m", "swafuzz", "zoo", "--budget", "ci", "--jobs", "2",
                        "--quiet", "--json", str(out), "--out", str(tmp_path / "zoo")],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    print(r.stdout)
    result = json.loads(out.read_text())
    assert result["control"]["clean"], result["control"]
    survivors = [m["name"] for m in result["mutants"] if not m["killed"]]
    assert not survivors, f"mutants survived: {survivors}"
    assert len(result["mutants"]) >= 18
    unproven = [c for c in check_names() if not result["checks"].get(c)]
    assert not unproven, f"checks that killed no mutant: {unproven}"
    assert result["unproven"] == [], f"leave-one-out rule broken: {result['unproven']}"
    for c in check_names():
        assert result["sole"][c] or c in defence_in_depth(), c
    # the issue-10 self-report experiments are killed by exec_path alone
    by_name = {m["name"]: m for m in result["mutants"]}
    assert by_name["graph_less"]["sole"] == "exec_path"
    assert "single-check ablation" in r.stdout and "leave-one-out proof per check" in r.stdout
    assert r.returncode == 0, r.stdout + r.stderr
