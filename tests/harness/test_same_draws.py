"""Same seed, same Cases, whatever else the process has loaded (issue 19: 1 vs 2 workers, and a
resumed run drawing other Cases once ``harness.report.read`` was imported at the CLI's start).

The cause: Hypothesis sometimes draws a literal from the source of any local module in
``sys.modules``; :func:`swafuzz.harness.pipeline.hypothesis_env.same_draws_in_any_process` empties that pool."""

import importlib
import sys

from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.execute import Verdict


def _draws(kind: str, n: int = 20) -> list[str]:
    out: list[str] = []

    def run_case(case):
        out.append(case.dumps())
        return Verdict(case, [], 1, 0.0)

    Campaign(run_case, seed=0, database=None).run_kind(kind, n)
    return out


def test_a_newly_loaded_local_module_does_not_change_the_draws(tmp_path, monkeypatch):
    before = {k: _draws(k) for k in ("episode", "decode")}
    # a local module full of literals a Case strategy could use (small ints, as in the
    # harness's own source): loaded between two campaigns with the same seed
    lits = ", ".join(str(i) for i in range(0, 300)) + ", " + ", ".join(
        repr(f"r{i}") for i in range(50))
    (tmp_path / "swafuzz_lits_mod.py").write_text(f"VALUES = [{lits}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("swafuzz_lits_mod")
    try:
        after = {k: _draws(k) for k in ("episode", "decode")}
    finally:
        sys.modules.pop("swafuzz_lits_mod", None)
    assert after == before
