"""CI gate for the bug zoo: every mutant is killed, the control is clean, and the leave-one-out
rule holds: every check is the only check that kills at least one mutant (its killing Case,
rerun with that check disabled, passes), or it is listed as defence in depth
(``defence=`` of its ``@check``, reason printed by the gate) and still fires on a mutant.

Runs ``swafuzz zoo --budget ci`` (seed 0, 60 cases per mutant; the second seed is
``tests/features/test_mutants.py``'s kill test; engine-level mutants on
the torch path, kernel-level ones on the Triton interpreter) and reads its ``--json`` matrix.
Reproduce: ``python -m swafuzz zoo --budget ci``; the full matrix: ``python -m swafuzz zoo``.
"""

import json
import os
import signal
import subprocess
import sys

import pytest
from support.runcli import HANG_S, wait_until

from swafuzz.checks.registry import check_names, defence_in_depth

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


def test_zoo_unknown_mutant_is_a_usage_error_listing_the_known_ones(tmp_path, capsys):
    from swafuzz.harness.cli.commands import main

    assert main(["zoo", "--mutant", "int64_store_locs", "--mutant", "nosuch", "--out",
                 str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "--mutant: 'nosuch' is not a mutant; known: " in err and "idle_uses_cache" in err
    assert not (tmp_path / "z").exists()


def test_zoo_narrowed_then_ctrl_c_prints_the_partial_matrix(tmp_path):
    """``--mutant`` (issue 19, 9): only those mutants run; Ctrl-C after the second prints the
    matrix of the finished ones and exits 130, no traceback; the per-seed line of a small run
    says how many cases each seed needed (it said ``median None``)."""
    names = ["int64_store_locs", "host_baked_translation", "idle_uses_cache",
             "pad_rows_not_zeroed"]
    err_path = tmp_path / "err"
    with open(err_path, "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "swafuzz", "zoo", "--budget", "ci", "--jobs",
                              "1", "--out", str(tmp_path / "z"),
                              *[a for n in names for a in ("--mutant", n)]],
                             stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=ROOT))
        wait_until(lambda: "host_baked_translation: " in err_path.read_text(), p)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=HANG_S)
    se = err_path.read_text()
    assert p.returncode == 130, out + se
    assert "Traceback" not in se + out and "None" not in se, se
    assert "int64_store_locs: killed (1/1 seeds, " in se and " cases to kill, " in se, se
    assert "interrupted: " in out and " of 4 mutants finished" in out, out
    done = [n for n in names if f"\n{n} " in out]
    assert done[:2] == names[:2] and len(done) < 4, out
    assert "mutant_int64_store_locs_contracts" in out  # the finished rows keep their repro


def test_cases_to_kill_per_seed_reads_for_any_number_of_seeds():
    from swafuzz.harness.zoo.matrix import cases_text

    assert cases_text([12]) == "12 cases to kill"
    assert cases_text([None]) == "no seed killed it"
    assert cases_text([12, None]) == "cases to kill per seed: 12, -"
    assert cases_text([3, 5, None, 9]) == "cases to kill per seed: 3, 5, -, 9 (median 5)"


def test_zoo_repro_paths_are_relative_to_its_out_dir(tmp_path, capsys):
    """A mutant's row (--json), the printed matrix and kill-matrix.md name its bundle as
    ``swafuzz repro findings/<name>.json`` (run from ``--out``, as the bundles' own command and
    the report), not by the absolute path an absolute ``--out`` gave it (issue 19, 7)."""
    import argparse

    from swafuzz.harness.zoo.matrix import finish, zoo_mutant

    out = tmp_path / "zoo"
    row = zoo_mutant("host_baked_translation", 20, 1, "torch", ["eager", "tape"], 20, str(out),
                     "auto")
    assert row["repro"].startswith("swafuzz repro findings/mutant_host_baked_translation_")
    assert (out / row["repro"].split(" ", 2)[2]).is_file()
    args = argparse.Namespace(out=str(out), json=str(tmp_path / "zoo.json"), budget="ci",
                              impl="torch", executor="auto")
    control = {"clean": True, "cases": 0, "seconds": 0.0, "check": None}
    finish(args, [row], control, 20, 1, 0, 20, 0.0, narrowed=True)
    printed, md = capsys.readouterr().out, (out / "kill-matrix.md").read_text()
    assert row["repro"] in md and row["repro"] in printed
    assert json.loads((tmp_path / "zoo.json").read_text())["mutants"][0]["repro"] == row["repro"]
    assert str(tmp_path) not in md


def test_zoo_ctrl_c_lost_in_a_finalizer_still_stops_the_zoo(tmp_path, monkeypatch, capsys):
    """A Ctrl-C whose KeyboardInterrupt lands where Python swallows exceptions (a gc callback or
    finalizer: "Exception ignored in ...") used to be lost, and the zoo ran on to exit 0 (CI of
    stop 33). The signal, not the exception, stops the zoo: after the mutant that was running,
    with the partial matrix, exit 130, and no traceback for the swallowed interrupt."""
    from swafuzz.harness.cli.commands import build_parser
    from swafuzz.harness.zoo import matrix

    real = matrix.zoo_mutant

    class Finalized:
        def __del__(self):  # the handler runs here and its KeyboardInterrupt is unraisable
            signal.raise_signal(signal.SIGINT)

    def mutant(name, *rest):
        if name == "host_baked_translation":
            Finalized()
        return real(name, *rest)

    monkeypatch.setattr(matrix, "zoo_mutant", mutant)
    names = ["int64_store_locs", "host_baked_translation", "idle_uses_cache"]
    args = build_parser().parse_args(["zoo", "--budget", "ci", "--jobs", "1", "--out",
                                      str(tmp_path / "z"),
                                      *[a for n in names for a in ("--mutant", n)]])
    assert matrix.run_zoo(args) == 130
    out, err = capsys.readouterr()
    assert "interrupted: 2 of 3 mutants finished" in out, out
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
