"""``swafuzz export`` (issue 26 item 6) without SGLang: every stored export
(``tests/data/exports/<ledger entry>/``) is regenerated from its bundle and equals the stored
files byte for byte; its expected values are the oracles' (the window oracle's layout, the tail
oracle's floors) on the Case, not the release's; bad inputs exit 2 naming the field and write
nothing. Running the exported tests against releases: ``test_export_upstream.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.runcli import cli_caller

from swafuzz.features.request_window.late_tail.oracle import tail_floors
from swafuzz.features.request_window.oracle_layout import padded_layout
from swafuzz.harness.ledger.entries import DEFAULT_LEDGER, load_ledger

ROOT = Path(__file__).resolve().parents[2]
EXPORTS = ROOT / "tests" / "data" / "exports"
BUNDLES = ROOT / "tests" / "data" / "bundles" / "sglang"


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # bundle paths as stored: relative to the repository
    return cli_caller(capsys, monkeypatch)


def stored() -> list[str]:
    return sorted(p.name for p in EXPORTS.iterdir() if p.is_dir())


def export_args(entry: str) -> list[str]:
    """The command that made ``tests/data/exports/ENTRY`` (its bundle, its bisect record)."""
    meta = json.loads((EXPORTS / entry / "export.json").read_text())
    bis = EXPORTS / entry / "bisect.json"
    return ["export", meta["bundle"]] + (["--bisect", str(bis.relative_to(ROOT))]
                                         if bis.exists() else [])


def test_every_reachable_entry_has_an_export():
    reachable = {e.id for e in load_ledger(DEFAULT_LEDGER)
                 if e.server is not None and e.server.status == "reachable"}
    assert reachable and reachable <= set(stored())


@pytest.mark.parametrize("entry", stored())
def test_export_regenerates_identically(cli, tmp_path, entry):
    code, out, err = cli(*export_args(entry), "--out", tmp_path / "x")
    assert code == 0, err
    made = sorted(os.listdir(tmp_path / "x"))
    kept = sorted(n for n in os.listdir(EXPORTS / entry) if n != "bisect.json")
    assert made == kept
    for name in made:
        assert (tmp_path / "x" / name).read_bytes() == (EXPORTS / entry / name).read_bytes(), name
    meta = json.loads((EXPORTS / entry / "export.json").read_text())
    assert meta["ledger_entry"] == entry


def _exported(entry: str) -> dict:
    """The constants an exported test hard-codes (its module text, executed without imports)."""
    src = (EXPORTS / entry / json.loads((EXPORTS / entry / "export.json").read_text())
           ["test_file"]).read_text()
    consts = {}
    for line in src.splitlines():
        name, _, value = line.partition(" = ")
        if name.isupper() and value:
            consts[name] = eval(value.split("  #")[0])  # noqa: S307 - our own generated literals
    return consts


@pytest.mark.parametrize("entry", ["window-dp-extend-pad-joins-run",
                                   "window-dp-decode-extend-pad-joins-run"])
def test_window_expectation_is_the_oracles(entry):
    """The window test's numbers are the oracle's layout of the batch's real rows, the padding
    rows after them (an independent recomputation here), not anything the release answered."""
    c = _exported(entry)
    n = c["NUM_TOKENS"]
    pad = len(c["OUT_CACHE_LOC"]) - n
    rows = []
    for slot, seq, ext in zip(c["REQ_POOL_INDICES"], c["SEQ_LENS"], c["EXTEND_SEQ_LENS"]):
        rows += [(slot, p, 0) for p in range(seq - ext, seq)]
    lay = padded_layout(rows, pad, len(c["REQ_POOL_INDICES"]), 128, c["CAPACITY"],
                        c["ZERO_ROW"])
    assert c["EXPECTED_COMMIT_MASK"] == lay.commit and not any(lay.commit[n:])
    assert c["EXPECTED_WRITE_LOC"] == lay.write_loc
    assert c["EXPECTED_VALID_HISTORY"] == [
        (i, lay.history_pos[i], lay.history_src[i]) for i, ok in enumerate(lay.history_valid)
        if ok]


def test_tail_expectation_is_the_oracles():
    c = _exported("short-tail-floor")
    idx, lens, floors = tail_floors(c["EXTEND_LENS"], c["SEQ_LENS"], c["EXPECTED_SWA_WINDOW"])
    assert (c["EXPECTED_TOKEN_INDICES"], c["EXPECTED_TAIL_LENS"], c["EXPECTED_FLOOR"]) == (
        idx, lens, floors)
    # the short extend on a request with earlier tokens: the floor reaches back past the extend
    assert all(f < s - e for f, s, e in zip(floors, c["SEQ_LENS"], c["EXTEND_LENS"]))


def _bundle_copy(tmp_path, **changes) -> Path:
    b = json.loads((BUNDLES / "server_window_dp_extend_pad_joins_run.json").read_text())
    b.update(changes)
    for k, v in list(changes.items()):
        if v is None:
            b.pop(k)
    p = tmp_path / "b.json"
    p.write_text(json.dumps(b))
    return p


@pytest.mark.parametrize("make,field", [
    (lambda t: t / "missing.json", "BUNDLE"),
    (lambda t: _bundle_copy(t, level=None), "'level'"),
    (lambda t: _bundle_copy(t, signature=None), "'signature'"),
    (lambda t: _bundle_copy(t, target="unified"), "'target'"),
    (lambda t: _bundle_copy(t, case={"level": "server", "requests": []}), "'case'"),
    (lambda t: _bundle_copy(t, signature="server:contracts"), "'signature'"),
    (lambda t: BUNDLES / "ring_p1_alloc_writes_mapping.json", "'level'"),
])
def test_bad_bundle_exits_2_naming_the_field(cli, tmp_path, make, field):
    out = tmp_path / "out"
    code, _, err = cli("export", make(tmp_path), "--out", out)
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_out_must_be_new_or_empty(cli, tmp_path):
    bundle = BUNDLES / "server_window_dp_extend_pad_joins_run.json"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    (tmp_path / "file").write_text("")
    for out in ("full", "file"):
        code, _, err = cli("export", bundle, "--out", tmp_path / out)
        assert code == 2 and "--out" in err, err
    assert sorted(os.listdir(tmp_path / "full")) == ["x"]
    (tmp_path / "empty").mkdir()
    code, _, err = cli("export", bundle, "--out", tmp_path / "empty")
    assert code == 0, err
    assert "README.md" in os.listdir(tmp_path / "empty")


def test_bad_bisect_record_exits_2(cli, tmp_path):
    bundle = BUNDLES / "server_window_dp_extend_pad_joins_run.json"
    (tmp_path / "bis.json").write_text('{"first_bad": "0.5.23"}')
    code, _, err = cli("export", bundle, "--out", tmp_path / "o", "--bisect",
                       tmp_path / "bis.json")
    assert code == 2 and "--bisect" in err and not (tmp_path / "o").exists()
