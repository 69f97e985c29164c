"""One Case language (issue 25, item 2): the server level's fields are ``CaseField``
declarations of the features that own them (``where`` ``config`` / ``model`` / ``request``),
parsed by the component level's parser: a value outside its declaration is refused naming the
field (exit 2 from the CLI), the fields of the first bundles are emitted at their default and the
later ones only when set, one page-size rule holds at both levels, and ``features_using`` sees
which features a server Case uses. Reproduce: ``pytest tests/server/test_server_case_fields.py``.
"""

from __future__ import annotations

import copy
import json

import pytest

from swafuzz import features
from swafuzz.harness.cli.commands import main as cli_main
from swafuzz.scenarios.case import Case, CaseError
from swafuzz.server.case import parse

BASE = {"model": {"full_tokens": 64, "swa_tokens": 32, "sliding_window": 2, "layers": 2},
        "requests": [{"prompt_len": 3, "max_new_tokens": 2}]}
#: every server-level declaration, with the feature declaring it
SERVER = [(f.name, d) for f in features.all_features() for d in f.field_decls()
          if d.level == "server"]
#: a value outside any declaration of the type
BAD = {"bool": 1, "int": -1, "int | None": "x", "str | None": "no-such-value", "str": "no-such-value",
       "tuple[int, ...]": [0], "tuple[int, ...] | None": [],
       "tuple[tuple[str, str], ...]": {"NO_SUCH_VARIABLE": "1"}}


def _with(where: str, name: str, value) -> dict:
    obj = copy.deepcopy(BASE)
    section = obj["requests"][0] if where == "request" else obj.setdefault(where, {})
    section[name] = value
    return obj


def _path(where: str, name: str) -> str:
    return f"requests[0].{name}" if where == "request" else f"{where}.{name}"


def test_every_server_section_is_declared_and_owned():
    """The sections' fields come from the declarations alone, each owned by one feature."""
    assert {d.where for _, d in SERVER} == {"config", "model", "request"}
    refs = [d.ref for _, d in SERVER]
    assert len(refs) == len(set(refs))
    owner = {d.ref: n for n, d in SERVER}
    assert owner["config.tp_size"] == owner["model.layers"] == "dense"
    assert owner["config.moe_a2a_backend"] == owner["config.env"] == owner["request.rank"] == "dp"
    assert owner["config.enable_encoder_swa_bounded_replay"] == "request_window"
    assert owner["config.enable_decoder_swa_bounded_replay"] == "late_tail"
    assert owner["model.late_layer_start"] == "late_tail"


@pytest.mark.parametrize("owner,decl", SERVER, ids=[d.ref for _, d in SERVER])
def test_a_server_field_out_of_its_declaration_is_refused_naming_it(owner, decl):
    with pytest.raises(CaseError) as e:
        parse(_with(decl.where, decl.name, BAD[decl.type]))
    assert e.value.path.startswith(_path(decl.where, decl.name)), str(e.value)
    if decl.choices and decl.type.startswith("str"):
        assert ", ".join(decl.choices) in str(e.value)


@pytest.mark.parametrize("owner,decl", SERVER, ids=[d.ref for _, d in SERVER])
def test_the_first_bundles_fields_are_emitted_and_the_later_ones_only_when_set(owner, decl):
    got = parse(BASE).to_json()
    section = got["requests"][0] if decl.where == "request" else got[decl.where]
    assert (decl.name in section) == decl.always


@pytest.mark.parametrize("where,name,value,owner", [
    ("config", "enable_encoder_swa_bounded_replay", 1, "request_window"),
    ("model", "late_layer_start", -1, "late_tail"),
    ("request", "rank", "x", "dp"),
])
def test_the_cli_exits_2_naming_a_feature_declared_server_field(where, name, value, owner,
                                                               tmp_path, capsys):
    assert f"{where}.{name}" in features.get(owner).case_fields
    case = dict(_with(where, name, value), level="server")
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"bundle_version": 1, "level": "server", "target": "sglang",
                             "case": case}))
    assert cli_main(["repro", str(p), "--no-isolate"]) == 2
    assert f"{_path(where, name)}: must be " in capsys.readouterr().err


def test_one_page_size_rule_at_both_levels():
    with pytest.raises(CaseError, match=r"^config\.page_size: must be a power of two in "
                                        r"\[1, 64\] \(got 3\)$"):
        parse(_with("config", "page_size", 3))
    pool = {"page_size": 3, "full_pages": 8, "swa_pages": 8, "window": 4, "layers": 1,
            "row_width": 4}
    with pytest.raises(CaseError, match=r"^pool\.page_size: must be a power of two in "
                                        r"\[1, 256\] \(got 3\)$"):
        Case.from_json({"pool": pool, "steps": []})


@pytest.mark.parametrize("changes,used", [
    ({}, {"dense"}),
    ({"config": {"enable_encoder_swa_bounded_replay": True}}, {"dense", "request_window"}),
    ({"config": {"enable_decoder_swa_bounded_replay": True}, "model": {"late_layer_start": 1}},
     {"dense", "late_tail"}),
    ({"config": {"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}}, {"dense", "dp"}),
])
def test_features_using_sees_the_features_of_a_server_case(changes, used):
    obj = copy.deepcopy(BASE)
    for where, fields in changes.items():
        obj.setdefault(where, {}).update(fields)
    assert {f.name for f in features.features_using(parse(obj))} == used
