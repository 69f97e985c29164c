"""A ledger entry's server-level answer (harness/ledger_server.py, the entries' ``server``
field): validation naming the field, the one-line text the ledger CLI and ``swafuzz report``
print, the per-entry table, and the repository's own ledger (every entry answered, each answer
naming a test that exists). Torch-free and fast: the answers themselves are checked against
the releases by tests/targets/test_sglang_reachability.py (marker ``upstream``)."""

from __future__ import annotations

import ast
import json
import os

import pytest

from swafuzz.harness.ledger_server import (
    STATUSES,
    ServerAnswer,
    parse_server,
    server_text,
    table,
)
from swafuzz.harness.ledger_when import LedgerError
from swafuzz.reports.summary import status_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEDGER = os.path.join(ROOT, "ledger", "known_failures.json")
T = "tests/targets/test_x.py::test_y"


def _ok(status):
    base = {"status": status, "test": T}
    if status == "unreachable":
        return {**base, "guard": "pkg.mod.fn: a rule"}
    extra = {"bundle": "tests/data/b.json"} if status == "reachable" else {}
    return {**base, "server_args": {"tp_size": 2, "cuda_graph_bs": [1, 2]},
            "requests": "one extend", **extra}


@pytest.mark.parametrize("status", STATUSES)
def test_valid_answers_parse(status):
    a = parse_server(_ok(status), "S")
    assert isinstance(a, ServerAnswer) and a.status == status and a.test == T


@pytest.mark.parametrize("obj,needle", [
    ([], "S: must be an object"),
    ({**_ok("probable"), "bundel": 1}, "unknown fields ['bundel']"),
    ({**_ok("probable"), "status": "maybe"}, "field 'status' must be one of"),
    ({**_ok("probable"), "test": "test_y"}, "field 'test' must name a test"),
    ({**_ok("probable"), "test": ""}, "field 'test' must be a non-empty string"),
    ({**_ok("probable"), "server_args": {"tp_size": {"a": 1}}}, "field 'server_args'"),
    ({**_ok("probable"), "server_args": {}}, "status 'probable' needs field 'server_args'"),
    ({**_ok("probable"), "env": {"X": 1}}, "field 'env'"),
    ({**_ok("probable"), "requests": ""}, "field 'requests' must be a non-empty"),
    ({**_ok("probable"), "bundle": "b.json"}, "field 'bundle' is given only with status"),
    ({**_ok("reachable"), "bundle": None}, "status 'reachable' needs field 'bundle'"),
    ({**_ok("unreachable"), "guard": ""}, "field 'guard' must be a non-empty"),
    ({**_ok("unreachable"), "note": 3}, "field 'note' must be a non-empty string when given"),
])
def test_malformed_answer_names_the_field(obj, needle):
    with pytest.raises(LedgerError) as ei:
        parse_server(obj, "S")
    assert needle in str(ei.value) and str(ei.value).startswith("S")


def test_text_and_table():
    u, p, r = (parse_server(_ok(s), "S") for s in ("unreachable", "probable", "reachable"))
    assert server_text(u) == "server: unreachable (guard pkg.mod.fn: a rule)"
    assert server_text(p) == "server: reachable (arguments accepted), bundle pending"
    assert server_text(r) == ("server: reachable (bundle tests/data/b.json; repro: swafuzz repro "
                              "tests/data/b.json)")
    assert server_text(None) == "server: not answered"

    class E:
        def __init__(self, i, server):
            self.id, self.releases, self.server = i, ("0.5.23",), server
    text = table([E("a", u), E("b", p), E("c", None)])
    lines = text.splitlines()
    assert lines[0].startswith("| entry | releases | status")
    assert "| a | 0.5.23 | unreachable | guard: pkg.mod.fn: a rule |" in lines[2]
    assert "reachable (args accepted), bundle pending" in lines[3]
    assert 'tp_size=2, cuda_graph_bs=[1, 2]; requests: one extend' in lines[3]
    assert "| c | 0.5.23 | not answered |" in lines[4]


def _test_names(path: str) -> set[str]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_repository_ledger_answers_every_entry_with_an_existing_test():
    with open(LEDGER, encoding="utf-8") as fh:
        entries = json.load(fh)["entries"]
    assert len(entries) == 11
    for i, e in enumerate(entries):
        a = parse_server(e.get("server"), f"entries[{i}] ({e['id']}).server")
        path, name = a.test.split("::")
        assert name in _test_names(path), f"{e['id']}: {a.test} does not exist"
        if a.status == "probable":
            assert a.bundle is None and a.requests and a.server_args
        if a.status == "reachable":  # a server-level bundle in the repository
            with open(os.path.join(ROOT, a.bundle), encoding="utf-8") as fh:
                assert json.load(fh)["level"] == "server", e["id"]
    statuses = {e["id"]: e["server"]["status"] for e in entries}
    assert statuses["window-dp-extend-pad-joins-run"] == "reachable"
    assert statuses["a2-window-before-idle"] == "unreachable"


def test_summary_status_shows_the_server_answer():
    f = {"ledger": [{"id": "e1", "cite": "https://x", "server": "server: unreachable (guard g)"}],
         "status": "known"}
    assert status_text(f) == "known (ledger: e1; server: unreachable (guard g))"
    assert status_text({"ledger": [{"id": "e1", "cite": "https://x"}]}) == "known (ledger: e1)"
