"""Process helpers shared by the harness tests that kill runs and watch what is left
(tests/harness/test_machinery.py, tests/harness/test_run_robustness.py). Linux: reads /proc."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie - ended, not yet reaped - does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
