"""The seed alone decides a campaign's Cases (issue 19 item 5, and what lets a fleet unit retried
on another node draw the Cases a single machine draws): Hypothesis's constants mined from the
local modules a process imported must not change them."""

import os
import subprocess
import sys
import textwrap

from support.runcli import HANG_S  # the hang guard: no wall-clock limit decides a test

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import json, sys
    from swafuzz import features
    from swafuzz.harness.pipeline.campaign import Campaign
    from swafuzz.harness.pipeline.execute import Verdict

    def cases():
        seen = []
        def run(case):
            seen.append(case.dumps())
            return Verdict(case, [], 0, 0.0)
        kind = sorted(features.kind_names())[0]
        Campaign(run, seed=3, database=None).run_kind(kind, 12)
        return seen

    first = cases()
    sys.path.insert(0, sys.argv[1])
    import sf_local_constants  # a 'local' module: Hypothesis mines its constants
    print(json.dumps(first == cases()))
""")


def test_same_seed_same_cases_whatever_modules_are_loaded(tmp_path):
    d = tmp_path / "mods"
    d.mkdir()
    consts = ", ".join(str(n) for n in (97, 113, 141, 150, 173, 199, 211, 4093, 65521, 7, 13))
    (d / "sf_local_constants.py").write_text(f"VALUES = ({consts}, 'x', 2.5)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(d)], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=HANG_S)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "true", "a loaded module changed the Cases"
