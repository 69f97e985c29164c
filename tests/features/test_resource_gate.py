"""Resource-gated scenario kinds (``Kind.ram_bytes > 0``, issue 19 item 4): a kind whose Cases
need GBs of RAM (a layer buffer past 2^31 bytes) is opt-in.

Verified with a gated record added to the registry for the test (a copy of ``decode`` named
``big_decode``, 2.2 GB): it is a known kind but not a default one (a plain ``swafuzz run``, the
zoo's control and the bench leave it out); ``--scenario big_decode`` is refused with exit 2,
naming the kind and the bytes, when the machine has less memory available, and nothing is
written; with enough memory the run goes on to its next check. The record rejects a negative or
non-int ``ram_bytes``. Reproduce: ``pytest tests/features/test_resource_gate.py``.
"""

from __future__ import annotations

import pytest

from swafuzz import features
from swafuzz.features.record import Feature, Kind, RecordError
from swafuzz.harness.cli import run as cli_run
from swafuzz.harness.cli.commands import main

NEED = 2_200_000_000
GATED = Feature(name="bigtest", title="a resource-gated test record", source="issue 19 item 4",
                kinds=(Kind("big_decode", "swafuzz.features.dense.kinds:decode_cases",
                            "decode on a big pool (test record)", ram_bytes=NEED),))


@pytest.fixture
def gated(monkeypatch):
    real = features.all_features()
    monkeypatch.setattr(features, "all_features", lambda: (*real, GATED))
    return real


def test_a_gated_kind_is_known_but_not_default(gated):
    assert "big_decode" in features.kind_names()
    assert "big_decode" not in features.default_kind_names()
    real_gated = {k.name: k.ram_bytes for f in gated for k in f.kinds if k.ram_bytes}
    assert features.gated_kinds() == {**real_gated, "big_decode": NEED}
    ordinary = [k for f in gated for k in f.kind_names() if k not in real_gated]
    assert list(features.default_kind_names()) == ordinary


def test_ram_refusal_names_the_kind_and_the_bytes(gated):
    why = features.ram_refusal(["decode", "big_decode"], 1 << 30)
    assert "big_decode needs 2200000000 bytes (2.0 GiB)" in why
    assert "1073741824 bytes (1.0 GiB) are available" in why
    assert features.ram_refusal(["big_decode"], NEED) is None
    assert features.ram_refusal(["big_decode"], None) is None  # unknown: not refused
    assert features.ram_refusal(["decode"], 0) is None


def test_run_refuses_a_gated_kind_without_the_memory(gated, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_run, "available_ram", lambda: 1 << 30)
    out = tmp_path / "out"
    assert main(["run", "--scenario", "big_decode", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--scenario" in err and "big_decode needs 2200000000 bytes" in err, err
    assert not out.exists()


def test_run_passes_the_gate_with_the_memory(gated, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_run, "available_ram", lambda: 24 << 30)
    out = tmp_path / "out"  # --examples 0 is the next check: the gate let the kind through
    assert main(["run", "--scenario", "big_decode", "--examples", "0", "--out", str(out)]) == 2
    assert "--examples" in capsys.readouterr().err and not out.exists()


def test_default_run_is_not_refused_for_memory(gated, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_run, "available_ram", lambda: 1)
    out = tmp_path / "out"  # no kind named: the gated kind is not in the defaults
    assert main(["run", "--examples", "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--examples" in err and "memory" not in err, err


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_the_record_rejects_a_bad_ram_bytes(bad):
    rec = Feature(name="bigtest", title="t", source="s",
                  kinds=(Kind("big_decode", "swafuzz.features.dense.kinds:decode_cases", "x",
                              ram_bytes=bad),))
    with pytest.raises(RecordError, match=r"kinds\[big_decode\]\.ram_bytes: .* is not an int >= 0"):
        rec.validate()


def test_the_gate_counts_every_worker(gated):
    assert features.ram_refusal(["big_decode"], NEED, workers=2).endswith(
        f"of RAM per Case x 2 workers; {NEED} bytes (2.0 GiB) are available")
    assert features.ram_refusal(["big_decode"], 2 * NEED, workers=2) is None


def test_the_bigaddr_kind_is_gated_and_refused_by_name(monkeypatch, tmp_path, capsys):
    from swafuzz.features.big_layer import RAM_BYTES

    assert features.gated_kinds()["bigaddr"] == RAM_BYTES
    assert "bigaddr" not in features.default_kind_names()
    monkeypatch.setattr(cli_run, "available_ram", lambda: RAM_BYTES - 1)
    out = tmp_path / "out"
    assert main(["run", "--scenario", "bigaddr", "--out", str(out)]) == 2
    assert f"bigaddr needs {RAM_BYTES} bytes" in capsys.readouterr().err and not out.exists()


def test_the_zoo_leaves_out_mutants_of_gated_kinds_unless_named(monkeypatch, tmp_path, capsys):
    from swafuzz.features.big_layer import RAM_BYTES
    from swafuzz.harness.cli import commands as cli
    from swafuzz.harness.zoo import matrix as zoo

    assert "store_int32_address" not in zoo.selected(None)
    assert set(zoo.selected(None)) == set(zoo.default_zoo())
    assert list(zoo.selected(["store_int32_address"])) == ["store_int32_address"]
    monkeypatch.setattr(cli, "available_ram", lambda: 1 << 30)
    out = tmp_path / "zoo"
    assert main(["zoo", "--mutant", "store_int32_address", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("--mutant: too little memory") == 1 and f"{RAM_BYTES} bytes" in err, err
    assert not out.exists()
