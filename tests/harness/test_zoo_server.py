"""``swafuzz zoo --level server`` without SGLang: exit 2 naming the ``sglang`` extra, and its
leave-one-out gate over a stand-in pipeline (the zoo's logic, not the release's code)."""

from __future__ import annotations

import argparse
import importlib.util
import json

import pytest

from swafuzz.checks.registry import check_names
from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.harness.zoo import server as zoo_server
from swafuzz.server.observation import ServerObs
from swafuzz.server.oracle import ServerFailure
from swafuzz.server.run import ServerResult
from swafuzz.targets.mutants import load_server

#: the stand-in release: server mutant -> the checks its killing Case fails
KILLS = {"server_decode_stale_loc": ("write_targets",),
         "server_evict_in_window": ("window_reads", "pool_bytes")}


def _args(tmp_path, **kw):
    return argparse.Namespace(budget="ci", examples=None, seeds=None, executor="eager",
                              out=str(tmp_path / "zoo"), json=str(tmp_path / "zoo.json"),
                              quiet=True, impl="auto", level="server", **kw)


def _runner(case, executor, mutant):
    fails = [ServerFailure(c, 0, f"stand-in {mutant}") for c in KILLS.get(mutant, ())]
    return ServerResult(case, fails, obs=ServerObs(target_version="stand-in"))


def _judge(case, obs, graphs, disabled):  # the same observation judged without ``disabled``
    return []


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="SGLang is here")
def test_without_sglang_exit_2_naming_the_extra(tmp_path, capsys):
    assert cli_main(["zoo", "--level", "server", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err
    assert "swafuzz[sglang]" in err and "scripts/upstream-env" in err and len(err.splitlines()) == 1


def test_level_is_checked(tmp_path, capsys):
    assert cli_main(["zoo", "--level", "cluster", "--out", str(tmp_path / "z")]) == 2
    assert "--level" in capsys.readouterr().err


def test_the_gate_fails_a_check_with_no_sole_kill_and_no_defence(tmp_path, capsys, monkeypatch):
    """Two mutants: one killed by write_targets alone (leave-one-out: its observation judged
    without it passes), one by two checks (no sole killer; pool_bytes has a defence reason);
    every other server check kills nothing alone: the whole-zoo gate fails naming them."""
    monkeypatch.setattr(zoo_server, "load_server",
                        lambda: {n: m for n, m in load_server().items() if n in KILLS})
    monkeypatch.setattr(zoo_server, "_bundle", lambda v, name, target: "{}\n")
    rc = zoo_server.run_server_zoo(_args(tmp_path, mutant=None), pipeline=object(),
                                   runner=_runner, judge=_judge)
    out = capsys.readouterr().out
    assert rc == 1
    assert "write_targets: only killer of server_decode_stale_loc" in out
    assert "FAILED leave-one-out rule:" in out
    unproven = out.split("FAILED leave-one-out rule:")[1].splitlines()[0]
    assert "window_reads" in unproven and "write_targets" not in unproven
    res = json.loads((tmp_path / "zoo.json").read_text())
    assert res["sole"]["write_targets"] == ["server_decode_stale_loc"]
    # pool_bytes fires (beside window_reads) and carries its defence reason: proven
    assert set(res["unproven"]) == set(check_names("server")) - {"write_targets", "pool_bytes"}
    assert res["control"]["clean"] and all(r["killed"] for r in res["mutants"])


def test_a_check_still_failing_without_the_killer_is_no_sole_kill(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.setattr(zoo_server, "load_server",
                        lambda: {"server_decode_stale_loc": load_server()[
                            "server_decode_stale_loc"]})
    monkeypatch.setattr(zoo_server, "_bundle", lambda v, name, target: "{}\n")
    still = [ServerFailure("pool_bytes", None, "still")]
    rc = zoo_server.run_server_zoo(_args(tmp_path, mutant=["server_decode_stale_loc"]),
                                   pipeline=object(), runner=_runner,
                                   judge=lambda *a, **k: still)
    res = json.loads((tmp_path / "zoo.json").read_text())
    row = res["mutants"][0]
    assert row["alone"] == ["write_targets"] and row["sole"] is None
    assert row["leave_one_out"] == ["pool_bytes"]
    assert rc == 0  # a --mutant subset: the gate is not enforced
    assert "not enforced" in capsys.readouterr().out


def test_unknown_server_mutant_is_an_input_error(tmp_path, capsys):
    with pytest.raises(Exception, match="not a server mutant; known: server_decode_stale_loc"):
        zoo_server.selected(["nope"])


def test_ctrl_c_prints_the_partial_matrix_and_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the first mutant, its interrupt lost in a finalizer (as a gc callback can
    lose it): that mutant finishes, its row is printed, the second does not run, exit 130, no
    traceback."""
    import signal

    monkeypatch.setattr(zoo_server, "load_server",
                        lambda: {n: m for n, m in load_server().items() if n in KILLS})
    monkeypatch.setattr(zoo_server, "_bundle", lambda v, name, target: "{}\n")

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    seen = []

    def runner(case, executor, mutant):
        seen.append(mutant)
        if mutant == "server_decode_stale_loc":
            Finalized()
        return _runner(case, executor, mutant)

    rc = zoo_server.run_server_zoo(_args(tmp_path, mutant=None), pipeline=object(),
                                   runner=runner, judge=_judge)
    out, err = capsys.readouterr()
    assert rc == 130
    assert "interrupted: 1 of 2 mutants finished; their matrix:" in out, out
    assert "server_decode_stale_loc" in out and "Traceback" not in err + out
    assert "server_evict_in_window" not in seen
