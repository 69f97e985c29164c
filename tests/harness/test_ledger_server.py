"""A ledger entry's server-level answer (harness/ledger/server.py, the entries' ``server``
field): validation naming the field, the one-line text the ledger CLI and ``swafuzz report``
print, the per-entry table, and the repository's own ledger (every entry answered, each answer
naming a test that exists). Torch-free and fast: the answers themselves are checked against
the releases by tests/targets/test_sglang_reachability.py (marker ``upstream``)."""

from __future__ import annotations

import ast
import json
import os

import pytest

from swafuzz.harness.ledger.entries import load_ledger, parse_ledger
from swafuzz.harness.ledger.known import server_known
from swafuzz.harness.ledger.server import (
    STATUSES,
    ServerAnswer,
    parse_server,
    server_text,
    table,
)
from swafuzz.harness.ledger.when import LedgerError
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
    ({**_ok("reachable"), "signatures": ["window_ring"]}, "field 'signatures' must be a non-empty"),
    ({**_ok("reachable"), "signatures": "server:x"}, "field 'signatures' must be a non-empty"),
    ({**_ok("reachable"), "signatures": []}, "field 'signatures' must be a non-empty"),
    ({**_ok("reachable"), "signatures": ["server:"]}, "field 'signatures' must be a non-empty"),
    ({**_ok("probable"), "signatures": ["server:x"]}, "field 'signatures' is given only with"),
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
    assert len(entries) == 12
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


class _E:
    """A ledger entry as :func:`server_known` sees it (target and releases as ``Entry``)."""

    def __init__(self, server, eid="e1", releases=("0.5.23",)):
        self.id, self.server, self.releases = eid, server, releases

    def applies(self, target, release):
        return target == "sglang" and release in self.releases


def test_server_findings_are_classified_by_signature_arguments_and_release():
    a = parse_server({**_ok("reachable"), "signatures": ["server:window_ring"]}, "S")
    cfg = {"tp_size": 2, "cuda_graph_bs": [1, 2], "page_size": 1}
    assert server_known([_E(a)], "sglang", "0.5.23", cfg, "server:window_ring") == "e1"
    # each part of the rule fails on its own: release, signature, an argument, the target
    assert server_known([_E(a)], "sglang", "0.5.22", cfg, "server:window_ring") is None
    assert server_known([_E(a)], "sglang", "0.5.23", cfg, "server:window_history") is None
    assert server_known([_E(a)], "sglang", "0.5.23", {**cfg, "tp_size": 1},
                        "server:window_ring") is None
    assert server_known([_E(a)], "sglang", "0.5.23", {"page_size": 1},
                        "server:window_ring") is None  # an argument the Case does not set
    assert server_known([_E(a)], "unified", "0.5.23", cfg, "server:window_ring") is None
    plain = parse_server(_ok("reachable"), "S")  # no signatures: nothing is classified
    assert server_known([_E(plain)], "sglang", "0.5.23", cfg, "server:window_ring") is None


def test_a_model_constraint_narrows_what_a_reachable_answer_knows():
    """``model`` holds on the Case's model facts: a window of 5 over pages of 4 leaves 1, a
    window of 8 none, a window below the page none (it is one page)."""
    from swafuzz.harness.ledger.server import model_facts
    from swafuzz.server.case import parse

    a = parse_server({**_ok("reachable"), "signatures": ["server:contracts"],
                      "model": {"window_page_remainder": {"min": 1}}}, "S")
    cfg = {"tp_size": 2, "cuda_graph_bs": [1, 2], "page_size": 1}

    def facts(window, page):
        return model_facts(parse({"config": {"page_size": page},
                                  "model": {"sliding_window": window},
                                  "requests": [{"prompt_len": 2}]}))

    assert facts(5, 4)["window_page_remainder"] == 1
    assert facts(5, 4)["sliding_window"] == 5
    assert server_known([_E(a)], "sglang", "0.5.23", cfg, "server:contracts",
                        facts(5, 4)) == "e1"
    for w, p in ((8, 4), (3, 4), (4, 4)):
        assert server_known([_E(a)], "sglang", "0.5.23", cfg, "server:contracts",
                            facts(w, p)) is None, (w, p)
    # without the Case's model facts only answers without ``model`` know a finding
    assert server_known([_E(a)], "sglang", "0.5.23", cfg, "server:contracts") is None
    assert "Case model window_page_remainder" in table([_E(a)])


@pytest.mark.parametrize("model,msg", [
    ({"window": 1}, "model.window: unknown field; allowed:"),
    ({}, "model: must be a non-empty object"),
    ({"sliding_window": "5"}, "model.sliding_window: must be an integer"),
    ({"tree_core": {"min": 1}}, "model.tree_core: unknown constraint"),
])
def test_a_bad_model_constraint_is_named(model, msg):
    with pytest.raises(LedgerError, match=msg.replace("(", r"\(")):
        parse_server({**_ok("reachable"), "signatures": ["server:x"], "model": model}, "S")
    with pytest.raises(LedgerError, match="'model' is given only with status 'reachable'"):
        parse_server({**_ok("probable"), "model": {"sliding_window": 5}}, "S")


def test_signature_patterns_and_booleans_are_matched_exactly():
    a = parse_server({**_ok("reachable"), "server_args": {"enable_x": True},
                      "signatures": ["server:window_*"]}, "S")
    assert server_known([_E(a)], "sglang", "0.5.23", {"enable_x": True},
                        "server:window_history") == "e1"
    assert server_known([_E(a)], "sglang", "0.5.23", {"enable_x": True},
                        "server:write_targets") is None
    assert server_known([_E(a)], "sglang", "0.5.23", {"enable_x": 1},
                        "server:window_ring") is None  # 1 is not True for a server argument


def _bundle_finding(entry):
    with open(os.path.join(ROOT, entry.server.bundle), encoding="utf-8") as fh:
        b = json.load(fh)
    from swafuzz.harness.ledger.server import model_facts
    from swafuzz.server.case import parse

    case = parse(b["case"])
    return case.config.server_args(), b["signature"], model_facts(case)


def test_the_reachable_entries_know_their_own_bundles_and_only_at_their_releases():
    """Each reachable answer with ``signatures`` classifies its own server-level bundle (its
    signature, on its Case's config) as itself at each of its releases, and nothing at another
    release or with another signature (the entry with a wrong release or signature no longer
    matches: the same rule run on a changed copy of the entry)."""
    entries = load_ledger(LEDGER)
    known = [e for e in entries if e.server is not None and e.server.signatures]
    assert {e.id for e in known} >= {"window-dp-extend-pad-joins-run", "short-tail-floor"}
    for e in known:
        cfg, sig, facts = _bundle_finding(e)
        for rel in e.releases:
            assert server_known(entries, "sglang", rel, cfg, sig, facts) == e.id, (e.id, rel)
        assert server_known(entries, "sglang", "0.5.12", cfg, sig, facts) is None, e.id
        with open(LEDGER, encoding="utf-8") as fh:
            raw = json.load(fh)
        [obj] = [x for x in raw["entries"] if x["id"] == e.id]
        for change in ({"releases": ["0.5.12"]},
                       {"server": {**obj["server"], "signatures": ["server:write_targets"]}},
                       {"server": {**obj["server"], "server_args": {
                           **obj["server"]["server_args"], "page_size": 64}}}):
            changed = parse_ledger({**raw, "entries": [{**obj, **change}]})
            assert server_known(changed, "sglang", e.releases[-1], cfg, sig, facts) is None, \
                change
        if e.server.model:  # a Case whose model misses the answer's ``model`` is not known
            assert server_known(entries, "sglang", e.releases[-1], cfg, sig,
                                {**facts, "window_page_remainder": 0}) is None, e.id


def test_the_server_ledger_of_a_unit_classifies_and_excludes_by_server_arguments():
    from swafuzz.harness.ledger.known import ServerKnownLedger
    from swafuzz.server.case import parse
    from swafuzz.server.oracle import ServerFailure
    from swafuzz.server.run import ServerResult

    entries = load_ledger(LEDGER)
    [e] = [x for x in entries if x.id == "window-dp-extend-pad-joins-run"]
    with open(os.path.join(ROOT, e.server.bundle), encoding="utf-8") as fh:
        case = parse(json.load(fh)["case"])
    led = ServerKnownLedger(entries, "sglang", "0.5.23")
    # the 0.5.22 entry does not apply to 0.5.23; the DP-attention entry does (other arguments)
    assert led and set(led.by_id) == {e.id, "window-dp-decode-extend-pad-joins-run"}
    v = ServerResult(case, [ServerFailure("window_ring", 0, "x")])
    assert led.classify(case, v) == e.id and led.can_exclude(e.id)
    assert led.excludes([e.id], case)
    tp1 = parse({**case.to_json(), "config": {**case.to_json()["config"], "tp_size": 1,
                                              "moe_dense_tp_size": None}})
    assert led.classify(tp1, ServerResult(tp1, [ServerFailure("window_ring", 0, "x")])) is None
    assert not led.excludes([e.id], tp1)
    assert not ServerKnownLedger(entries, "sglang", "0.5.12")  # nothing classifies there
