"""The known-failure ledger (harness/ledger/entries.py): parsing with field-naming errors, classifying a
run's findings into known / new, entries nothing matched, replaying an entry's repro bundle, and
the repository's own ledger file."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from swafuzz.harness.ledger import entries as ledger
from swafuzz.harness.ledger.entries import (
    DEFAULT_LEDGER,
    LedgerError,
    classify,
    load_ledger,
    parse_ledger,
    replay_entries,
)
from swafuzz.harness.ledger.when import case_forwards

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "bundles")


def _entry(**kw):
    e = {"id": "e1", "target": "sglang", "signature": "write_targets/decode/*",
         "cite": "https://github.com/sgl-project/sglang/pull/1", "note": "test entry"}
    e.update(kw)
    return e


def _ledger(*entries):
    return {"ledger_version": 1, "entries": list(entries)}


def test_repository_ledger_is_valid():
    for e in load_ledger(DEFAULT_LEDGER):
        assert e.cite.startswith("https://")


@pytest.mark.parametrize("obj,needle", [
    ([], "must be a JSON object"),
    ({"ledger_version": 2, "entries": []}, "'ledger_version' must be 1"),
    ({"ledger_version": 1, "entries": {}}, "'entries' must be a list"),
    (_ledger(_entry(cite="PR 1")), "entries[0]: field 'cite'"),
    (_ledger(_entry(signature="")), "entries[0]: field 'signature'"),
    (_ledger(_entry(releases="0.5.12")), "entries[0]: field 'releases'"),
    (_ledger(_entry(extra=1)), "entries[0]: unknown fields ['extra']"),
    (_ledger(_entry(), _entry()), "entries[1]: field 'id' 'e1' repeats"),
])
def test_malformed_ledger_names_the_field(obj, needle):
    with pytest.raises(LedgerError) as ei:
        parse_ledger(obj, "L")
    assert needle in str(ei.value)


def test_classify_known_new_unmatched():
    entries = parse_ledger(_ledger(
        _entry(id="dec", releases=["0.5.12"]),
        _entry(id="idle", signature="write_set/idle/live"),
        _entry(id="other", target="unified", signature="*")))
    findings = [
        {"target": "sglang", "signature": "write_targets/decode/live", "message": "m1"},
        {"target": "sglang", "signature": "pool_bytes/decode/live", "message": "m2"},
    ]
    c = classify(findings, entries, "sglang", "0.5.12")
    assert [(f["signature"], e.id) for f, e in c.known] == [("write_targets/decode/live", "dec")]
    assert [f["signature"] for f in c.new] == ["pool_bytes/decode/live"]
    assert [e.id for e in c.unmatched] == ["idle"]  # "other" is for another target
    # on another release the release-pinned entry does not apply
    c = classify(findings, entries, "sglang", "0.5.23")
    assert not c.known and len(c.new) == 2
    assert [e.id for e in c.unmatched] == ["idle"]


def test_main_exit_codes(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "findings").mkdir(parents=True)
    (run / "findings" / "a.json").write_text(json.dumps(
        {"target": "sglang", "signature": "write_targets/decode/live", "message": "m"}))
    led = tmp_path / "l.json"
    led.write_text(json.dumps(_ledger(_entry())))
    assert ledger.main([str(run), "--ledger", str(led)]) == 0
    assert "KNOWN write_targets/decode/live: ledger entry e1" in capsys.readouterr().out
    led.write_text(json.dumps(_ledger(_entry(signature="pool_bytes/*"))))
    assert ledger.main([str(run), "--ledger", str(led)]) == 1
    out = capsys.readouterr().out
    assert "NEW   write_targets/decode/live" in out and "UNSEEN ledger entry e1" in out
    led.write_text("{")
    assert ledger.main([str(run), "--ledger", str(led)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert ledger.main([str(tmp_path / "nope"), "--ledger", str(led)]) == 2


def test_replay_reports_entries_that_no_longer_reproduce(tmp_path):
    """The draft_extend_zeros bundle still fails on its mutant and does not fail on unified:
    an entry citing it for ``unified`` is reported as no longer reproducing."""
    (tmp_path / "ledger").mkdir()
    shutil.copy(os.path.join(DATA, "draft_extend_zeros.json"), tmp_path / "ledger" / "r.json")
    entries = parse_ledger(_ledger(
        _entry(id="mut", target="mutant:draft_extend_zeros", signature="write_targets/*",
               repro="ledger/r.json"),
        _entry(id="fixed", target="unified", signature="*", repro="ledger/r.json")))
    assert replay_entries(entries, "mutant:draft_extend_zeros", None, str(tmp_path),
                          executor="tape") == {"mut": True}
    assert replay_entries(entries, "unified", None, str(tmp_path), executor="auto") == {
        "fixed": False}


# --------------------------------------------------------------------------- when predicates
_POOL = {"page_size": 4, "full_pages": 4, "swa_pages": 4, "window": 2, "layers": 1,
         "draft_layers": 1, "row_width": 1, "row_dtype": "uint8"}
_DP_EAGER = [{"op": "admit", "rid": 0, "length": 1},
             {"op": "dp_decode", "rids": [0], "rank_tokens": [2], "exec": "eager"}]
_DP_GRAPH = [{"op": "admit", "rid": 0, "length": 1},
             {"op": "dp_decode", "rids": [0], "rank_tokens": [2], "exec": "graph"}]
# the trigger of a (made-up) known bug: a DP-padded step run eagerly, page size >= 2
_WHEN = {"pool": {"page_size": {"min": 2}},
         "steps": [{"op": ["dp_decode", "verify", "draft_extend"],
                    "rank_tokens": {"present": True}, "exec": "eager"}]}


def _finding(steps, sig="write_targets/dp_padded/dummy", page_size=4, release="0.5.23"):
    return {"target": "sglang", "signature": sig, "message": "m",
            "versions": {"sglang": release},
            "case": {"version": 1, "kind": "dp_padded", "pool": {**_POOL, "page_size": page_size},
                     "steps": steps}}


def test_predicate_decides_known_versus_new():
    """Same signature: the finding whose Case has the trigger is known; the one without it (a
    graph step instead of an eager one; page size 1) is NEW, so a CI gate goes red."""
    entries = parse_ledger(_ledger(_entry(id="dp-eager", signature="write_targets/*/dummy",
                                          when=_WHEN)))
    known, graph, p1 = (_finding(_DP_EAGER), _finding(_DP_GRAPH),
                        _finding(_DP_EAGER, page_size=1))
    c = classify([known, graph, p1], entries, "sglang")
    assert [(f is known, e.id) for f, e in c.known] == [(True, "dp-eager")]
    assert c.new == [graph, p1]
    # a finding without a Case (or one that does not parse) cannot satisfy a predicate
    c = classify([{k: v for k, v in known.items() if k != "case"},
                  {**known, "case": {"pool": {}}}], entries, "sglang")
    assert not c.known and len(c.new) == 2


def test_predicate_release_range_and_kind():
    entries = parse_ledger(_ledger(_entry(
        signature="write_targets/*", when={"release": {"min": "0.5.20", "max": "0.5.23"},
                                           "kind": ["dp_padded", "dp_spec"]})))
    assert classify([_finding(_DP_EAGER)], entries, "sglang").known
    assert classify([_finding(_DP_EAGER, release="0.5.12")], entries, "sglang").new
    assert classify([_finding(_DP_EAGER, release="0.5.100")], entries, "sglang").new
    # --release wins over the bundle's recorded version
    assert classify([_finding(_DP_EAGER, release="0.5.12")], entries, "sglang", "0.5.21").known
    f = _finding(_DP_EAGER)
    f["case"]["kind"] = "decode"
    assert classify([f], entries, "sglang").new


def test_entry_without_predicate_still_matches_and_is_warned():
    entries = parse_ledger(_ledger(_entry(id="loose", signature="write_targets/*"),
                                   _entry(id="exact", signature="write_targets/x/dummy",
                                          when=_WHEN)))
    assert classify([_finding(_DP_GRAPH)], entries, "sglang").known  # signature only
    w = ledger.imprecise(entries)
    assert any("entry loose: no 'when' predicate" in m for m in w)
    assert any("entry exact: shadowed by entry loose" in m for m in w)
    assert ledger.imprecise(parse_ledger(_ledger(_entry(when=_WHEN)))) == []


@pytest.mark.parametrize("when,needle", [
    ([], "entries[0].when: must be a non-empty object"),
    ({}, "entries[0].when: must be a non-empty object"),
    ({"pool": {"page_size": 1}, "op": "decode"}, "entries[0].when: unknown keys ['op']; allowed:"),
    ({"pool": {"page_sise": 1}}, "entries[0].when.pool.page_sise: unknown field; allowed: ["),
    ({"pool": {"page_size": "1"}}, "entries[0].when.pool.page_size: must be an integer"),
    ({"pool": {"page_size": True}}, "entries[0].when.pool.page_size: must be an integer"),
    ({"pool": {"page_size": {"min": 3, "max": 1}}}, "page_size: min 3 > max 1"),
    ({"pool": {"page_size": {"eq": 1}}}, "page_size: unknown constraint ['eq']; allowed forms"),
    ({"pool": {"page_size": {"present": True}}}, "page_size: {\"present\": ...} is for list"),
    ({"pool": {"page_size": []}}, "page_size: an empty list of allowed values"),
    ({"pool": {"window": [1, "2"]}}, "entries[0].when.pool.window[1]: must be an integer"),
    ({"graph": {"prep_in_graph": 1}}, "entries[0].when.graph.prep_in_graph: must be true/false"),
    ({"steps": {"op": "decode"}}, "entries[0].when.steps: must be a non-empty list"),
    ({"steps": [{"exec": "eagr"}]}, "entries[0].when.steps[0].exec: must be one of ['eager', "
                                    "'graph']"),
    ({"steps": [{"op": "decode"}, {"op": "dcode"}]}, "entries[0].when.steps[1].op: must be one "
                                                     "of ['admit'"),
    ({"steps": [{"rank_tokens": [2]}]}, "entries[0].when.steps[0].rank_tokens: a list field "
                                        "takes {\"present\": true|false}"),
    ({"steps": [{"rank_tokens": {"present": 1}}]}, "rank_tokens.present: must be true or false"),
    ({"steps": [{"rank_tokens": {"min": 1}}]}, "rank_tokens: unknown constraint ['min']"),
    ({"release": "v0.5"}, "entries[0].when.release: must be a version like"),
    ({"release": {"min": 5}}, "entries[0].when.release.min: must be a version"),
    ({"kind": 3}, "entries[0].when.kind: must be a string"),
])
def test_malformed_predicate_names_the_json_path(when, needle):
    with pytest.raises(LedgerError) as ei:
        parse_ledger(_ledger(_entry(when=when)), "L")
    assert needle in str(ei.value)


def test_main_predicate_new_is_exit_1_and_malformed_is_exit_2(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "findings").mkdir(parents=True)
    (run / "findings" / "a.json").write_text(json.dumps(_finding(_DP_GRAPH)))
    led = tmp_path / "l.json"
    led.write_text(json.dumps(_ledger(_entry(signature="write_targets/*", when=_WHEN))))
    assert ledger.main([str(run), "--ledger", str(led)]) == 1
    out = capsys.readouterr()
    assert "NEW   write_targets/dp_padded/dummy" in out.out
    assert "outside their 'when' predicates" in out.out and "warning" not in out.err
    (run / "findings" / "a.json").write_text(json.dumps(_finding(_DP_EAGER)))
    assert ledger.main([str(run), "--ledger", str(led)]) == 0
    assert "KNOWN write_targets/dp_padded/dummy: ledger entry e1" in capsys.readouterr().out
    led.write_text(json.dumps(_ledger(_entry(signature="write_targets/*"))))
    assert ledger.main([str(run), "--ledger", str(led)]) == 0
    assert "ledger: warning: entry e1: no 'when' predicate" in capsys.readouterr().err
    led.write_text(json.dumps(_ledger(_entry(when={"steps": [{"exec": "eagr"}]}))))
    assert ledger.main([str(run), "--ledger", str(led)]) == 2
    err = capsys.readouterr().err
    assert "entries[0].when.steps[0].exec" in err and "['eager', 'graph']" in err


def test_repro_mismatches(tmp_path):
    (tmp_path / "ledger").mkdir()
    shutil.copy(os.path.join(DATA, "draft_extend_zeros.json"), tmp_path / "ledger" / "r.json")
    b = json.loads((tmp_path / "ledger" / "r.json").read_text())
    sig = b["signature"]
    entries = parse_ledger(_ledger(
        _entry(id="ok", target="mutant:draft_extend_zeros", signature=sig, repro="ledger/r.json",
               when={"steps": [{"op": "draft_extend"}]}),
        _entry(id="pred", target="mutant:draft_extend_zeros", signature=sig,
               repro="ledger/r.json", when={"steps": [{"op": "dp_decode"}]}),
        _entry(id="sig", target="mutant:draft_extend_zeros", signature="nope/*",
               repro="ledger/r.json"),
        _entry(id="gone", signature="*", repro="ledger/missing.json")))
    got = ledger.repro_mismatches(entries, str(tmp_path))
    assert [m.split(":")[0] for m in got] == ["entry pred", "entry sig", "entry gone"], got
    assert "does not satisfy its 'when'" in got[0] and "outside 'nope/*'" in got[1]


def test_repository_ledger_repros_satisfy_their_entries():
    """Every entry of the repository's ledger that names a repro bundle is matched by it
    (signature and ``when``): an entry's predicate that excludes its own repro is a defect."""
    base = os.path.dirname(os.path.dirname(DEFAULT_LEDGER))
    assert ledger.repro_mismatches(load_ledger(DEFAULT_LEDGER), base) == []


# the forwards view: how a forward ran (executor-dependent), not only what the step asked
_EAGER_PADDED = {"forwards": [{"exec": "eager", "padded": True, "n_real": {"min": 1}}]}


def _dp_graph_finding(executor, dp_extend=False, buckets=(1, 2, 4)):
    step = {"op": "dp_decode", "rids": [0], "rank_tokens": [3], "exec": "graph"}
    if dp_extend:
        step["dp_extend"] = True
    f = _finding([{"op": "admit", "rid": 0, "length": 1}, step])
    f["case"]["graph"] = {"buckets": list(buckets)}
    if executor is not None:
        f["executor"] = executor
    return f


def test_forwards_predicate_follows_the_executors():
    """A graph dp_decode step with padding: under the tape executor it runs as a graph (not
    'eager padded'); the eager executor runs it eagerly with its 3 padded rows; a dp_extend
    rewrite runs as an eager EXTEND under any executor; without a recorded executor the forward
    runs as the Case asks."""
    entries = parse_ledger(_ledger(_entry(signature="write_targets/*", when=_EAGER_PADDED)))
    assert classify([_dp_graph_finding("tape")], entries, "sglang").new
    assert classify([_dp_graph_finding("eager+tape")], entries, "sglang").known
    assert classify([_dp_graph_finding(None)], entries, "sglang").new
    assert classify([_dp_graph_finding("tape", dp_extend=True)], entries, "sglang").known
    fw = case_forwards(ledger.finding_case(_dp_graph_finding("eager+tape")), ("eager", "tape"))
    assert [(f["executor"], f["mode"], f["exec"], f["n_real"], f["rows"], f["padded"])
            for f in fw] == [("eager", "EXTEND", "eager", 1, 1, False),
                             ("eager", "DECODE", "eager", 1, 3, True),
                             ("tape", "EXTEND", "eager", 1, 1, False),
                             ("tape", "DECODE", "graph", 1, 4, True)]
    # a graph-only pattern: the tape executor's graph forward
    graph = parse_ledger(_ledger(_entry(signature="write_targets/*", when={
        "forwards": [{"mode": "DECODE", "exec": "graph", "executor": "tape"}]})))
    assert classify([_dp_graph_finding("eager+tape")], graph, "sglang").known
    assert classify([_dp_graph_finding("eager")], graph, "sglang").new


@pytest.mark.parametrize("when,needle", [
    ({"forwards": [{"mode": "DECOD"}]}, "entries[0].when.forwards[0].mode: must be one of "
                                        "['EXTEND', 'DECODE'"),
    ({"forwards": [{"step": 1}]}, "entries[0].when.forwards[0].step: unknown field; allowed: "
                                  "['exec', 'executor', 'mode', 'n_real', 'padded', 'pool', "
                                  "'rows']"),
    ({"forwards": [{"padded": "yes"}]}, "entries[0].when.forwards[0].padded: must be true/false"),
    ({"forwards": []}, "entries[0].when.forwards: must be a non-empty list of forward patterns"),
])
def test_malformed_forwards_pattern(when, needle):
    with pytest.raises(LedgerError) as ei:
        parse_ledger(_ledger(_entry(when=when)), "L")
    assert needle in str(ei.value)


def test_cli_prints_the_server_table(tmp_path, capsys):
    """``--server`` needs no RUN_DIR and prints one row per entry; without either it exits 2."""
    assert ledger.main(["--server"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| entry | releases | status")
    assert len(out) == 2 + len(load_ledger(DEFAULT_LEDGER))
    assert ledger.main([]) == 2
    assert "RUN_DIR is required" in capsys.readouterr().err
