"""``docs/ADDING-A-FEATURE.md`` §6, re-done: a server kind, a server check and a server mutant
added to an existing feature (``dp``) by editing only that feature's folder.

On a copy of the package, the section's own code blocks are written into ``dp``'s files (so
the doc and this test cannot drift); then, in a subprocess importing the copy, the registry
sees the kind at the server level (opt-in), the check among the server checks, the mutant among
the server mutants with its patch loadable, and nothing at the component level changed. No
SGLang needed: the patch's module imports none, the ranks do.

Reproduce: ``pytest tests/features/test_adding_a_server_part.py``.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "ADDING-A-FEATURE.md")
DP = os.path.join("swafuzz", "features", "dp")


def _blocks() -> list[str]:
    """The ``python`` code blocks of the doc's server-level section, in order."""
    text = open(DOC, encoding="utf-8").read()
    section = text[text.index("## 6. Adding to the server level"):]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _edit(root, rel: str, anchor: str, new: str) -> None:
    """Insert ``new`` after the one occurrence of ``anchor`` in ``rel`` (the anchor must be
    there exactly once: when dp's code moves, this test says where)."""
    path = os.path.join(root, DP, rel)
    text = open(path, encoding="utf-8").read()
    assert text.count(anchor) == 1, f"{rel}: anchor {anchor!r} found {text.count(anchor)} times"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(anchor, anchor + new))


def _replace_once(root, rel: str, old: str, new: str) -> None:
    path = os.path.join(root, DP, rel)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text.count(old) == 1, f"{rel}: {old!r} found {text.count(old)} times"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new))


def _apply(root) -> None:
    kind_mod, kind_entry, check, mutant = _blocks()
    check_fn, call = check.split("# in _ranks, per rank r:\n")
    with open(os.path.join(root, DP, "server_pplx.py"), "w", encoding="utf-8") as fh:
        fh.write('"""The server kind ``server_dp_pplx`` (docs/ADDING-A-FEATURE.md §6)."""\n\n'
                 "import dataclasses\n\n"
                 "from swafuzz.features.dp.server_kind import PPLX_ENV\n"
                 "from swafuzz.features.dp.server_kind import cases as dp_cases\n"
                 "from swafuzz.server.case import validate\n\n" + kind_mod)
    entry = "".join("        " + ln if ln else ln for ln in kind_entry.splitlines(True))
    _edit(root, "__init__.py", "            level='server',\n            opt_in=True,\n"
          "            since={'sglang': RANKED},\n        ),\n    ),\n"
          "    fields=", "")  # the kinds tuple's end, once: the new kind goes last in it
    _replace_once(root, "__init__.py", "        ),\n    ),\n    fields=",
                  "        ),\n" + entry + "    ),\n    fields=")
    _replace_once(root, "__init__.py", "checks=('server:dp_convert',), check_modules=("
                  "'.server_convert_oracle',)", "checks=('server:dp_convert', "
                  "'server:rank_rows'), check_modules=('.server_convert_oracle', "
                  "'swafuzz.features.dp.server_oracle')")
    _edit(root, "server_oracle.py", "import dataclasses\n\n",
          "from swafuzz.features.record import check\n")
    _edit(root, "server_oracle.py", "for f in judge(sub, o, graphs, pads=pads[r], "
          "disabled=disabled)]\n", call)
    with open(os.path.join(root, DP, "server_oracle.py"), "a", encoding="utf-8") as fh:
        fh.write("\n\n" + check_fn.rstrip() + "\n")
    with open(os.path.join(root, DP, "mutants.py"), "a", encoding="utf-8") as fh:
        fh.write(mutant)
    _edit(root, "sglang_server_pad.py", '"server_pad_seq_lens_zero": "seq_lens_fill_0"',
          ',\n                          "server_dp_pad_live_loc": "pad_live_loc"')
    _edit(root, "sglang_server_pad.py", "    return release_mutant(\"server_pad_seq_lens_zero\")\n",
          "\n\ndef dp_pad_live_loc():\n    return release_mutant(\"server_dp_pad_live_loc\")\n")


#: what the registry says, from a process importing the package at PYTHONPATH
_PROBE = r"""
import json
from hypothesis import HealthCheck, given, settings
from swafuzz import features
from swafuzz.checks.registry import all_checks
from swafuzz.targets.mutants import load_all, load_server
out = {"kinds": {lvl: list(features.kind_names(lvl)) for lvl in ("component", "server")},
       "default": {lvl: list(features.default_kind_names(lvl)) for lvl in ("component", "server")},
       "checks": {lvl: {c.name: c.defence for c in all_checks(lvl)} for lvl in ("component", "server")},
       "mutants": list(load_all()),
       "server_mutants": {n: [m.feature, list(m.kinds), m.patch] for n, m in load_server().items()}}
if "server_dp_pplx" in out["kinds"]["server"]:
    k = features.kind("server_dp_pplx")
    out["kind"] = [features.feature_of_kind(k.name).name, k.level, k.opt_in]
    drawn = []
    @settings(max_examples=5, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(features.strategy("server_dp_pplx")())
    def draw(case):
        drawn.append([case.kind, case.config.moe_a2a_backend, case.config.dp_size])
    draw()
    out["drawn"] = drawn
    from swafuzz.features.dp import server_oracle
    from swafuzz.features.dp.sglang_server_pad import active_mutant
    from swafuzz.server.observation import ForwardRec, ServerObs
    obs = ServerObs(forwards=[ForwardRec(0, "EXTEND", stores=[[5, 6]]),
                              ForwardRec(1, "DECODE", stores=[[7, 0, 0]])])
    out["rank_rows"] = server_oracle.rank_rows(1, obs, {0: ("EXTEND", 2, 1), 1: ("DECODE", 2, 2)})
    with load_server()["server_dp_pad_live_loc"].patched():
        out["patched"] = active_mutant()
print(json.dumps(out))
"""


def _probe(pythonpath) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    res = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=600, cwd=str(pythonpath))
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _listed(pythonpath) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    res = subprocess.run([sys.executable, "-m", "swafuzz", "list", "--features", "--json"],
                         env=env, capture_output=True, text=True, timeout=600,
                         cwd=str(pythonpath))
    assert res.returncode == 0, res.stderr[-3000:]
    return next(f for f in json.loads(res.stdout)["features"] if f["name"] == "dp")


def _changed(a, b, rel: str = "") -> set[str]:
    """Paths under ``rel`` that differ between trees ``a`` and ``b`` (added, removed, edited)."""
    cmp = filecmp.dircmp(os.path.join(a, rel), os.path.join(b, rel),
                         ignore=["__pycache__"])
    out = {os.path.join(rel, n) for n in cmp.left_only + cmp.right_only + cmp.funny_files}
    out |= {os.path.join(rel, n) for n in cmp.common_files
            if not filecmp.cmp(os.path.join(a, rel, n), os.path.join(b, rel, n), shallow=False)}
    for d in cmp.common_dirs:
        out |= _changed(a, b, os.path.join(rel, d))
    return out


def test_the_doc_example_uses_the_level_apis():
    kind_mod, kind_entry, check, mutant = _blocks()
    assert "level='server', opt_in=True" in kind_entry and "server_dp_pplx" in kind_entry
    assert '@check("rank_rows", level="server", defence=' in check
    assert 'mutant("server_dp_pad_live_loc", level="server", kinds=("server_dp_pplx",)' in mutant
    assert "patch=" in mutant and "NAME = \"server_dp_pplx\"" in kind_mod


def test_a_server_kind_check_and_mutant_touch_only_the_feature_folder(tmp_path):
    shutil.copytree(os.path.join(ROOT, "swafuzz"), tmp_path / "swafuzz",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _apply(tmp_path)
    changed = _changed(os.path.join(ROOT, "swafuzz"), tmp_path / "swafuzz")
    assert changed and all(os.path.join("swafuzz", p).startswith(DP + os.sep)
                           for p in changed), changed
    before, after = _probe(ROOT), _probe(tmp_path)
    # the server level sees the three, in dp, at level server; the kind opt-in
    new = after["kinds"]["server"]
    assert new[new.index("server_dp_overlap") + 1] == "server_dp_pplx"  # after dp's own kinds
    assert [k for k in new if k != "server_dp_pplx"] == before["kinds"]["server"]
    assert after["kind"] == ["dp", "server", True]
    assert after["default"] == before["default"]  # opt-in: the default campaigns unchanged
    assert set(after["checks"]["server"]) == set(before["checks"]["server"]) | {"rank_rows"}
    assert after["checks"]["server"]["rank_rows"].startswith("implied by write_targets")
    assert after["server_mutants"]["server_dp_pad_live_loc"] == [
        "dp", ["server_dp_pplx"], "swafuzz.features.dp.sglang_server_pad:dp_pad_live_loc"]
    assert set(after["server_mutants"]) == set(before["server_mutants"]) | {
        "server_dp_pad_live_loc"}
    assert after["patched"] == "pad_live_loc"
    assert after["drawn"] and all(d == ["server_dp_pplx", "pplx", 2] for d in after["drawn"])
    assert after["rank_rows"] == [
        [1, "rank 1: forward 1 stored 3 rows, the MLP sync pads it to 2"]]
    # the component level is unchanged
    assert after["kinds"]["component"] == before["kinds"]["component"]
    assert after["checks"]["component"] == before["checks"]["component"]
    assert after["mutants"] == before["mutants"]
    # the change keeps the feature's import contracts and the structure rules
    shutil.copytree(os.path.join(ROOT, "lint"), tmp_path / "lint")
    shutil.copy(os.path.join(ROOT, ".importlinter"), tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "lint-imports"),
                          str(tmp_path)], cwd=str(tmp_path), env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "structure-report"),
                          str(tmp_path), "--json"], env=env, capture_output=True, text=True,
                         timeout=600)
    rep = json.loads(res.stdout)
    assert (rep["cycles"], rep["feature_folder_cycles"], rep["over_400"],
            rep["private_cross_imports"], rep["feature_names_in_core"]) == ([], [], [], [], [])
    # swafuzz list --features --json shows them with their level
    dp = _listed(tmp_path)
    assert {"name": "server_dp_pplx", "level": "server", "opt_in": True}.items() <= next(
        k for k in dp["kinds"] if k["name"] == "server_dp_pplx").items()
    assert {"name": "rank_rows", "level": "server"}.items() <= next(
        c for c in dp["check_entries"] if c["name"] == "rank_rows").items()
    assert {"name": "server_dp_pad_live_loc", "level": "server"}.items() <= next(
        m for m in dp["mutant_entries"] if m["name"] == "server_dp_pad_live_loc").items()
