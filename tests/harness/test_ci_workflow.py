"""The worked GitHub Actions workflow (``docs/ci/github-actions-fuzz.yml``, explained in
``docs/CI.md``) stays true: it parses, its shard matrix covers 1..N, every ``swafuzz`` command it
runs is a real command whose flags ``swafuzz <command> --help`` lists and which the CLI's parser
accepts, the shards upload their run directories (bundles, junit.xml) and the merge job gates on
``swafuzz merge``. docs/CI.md shows the same file.

PyYAML is not in the project's tested set, so the file is read with :func:`load_yaml` below: the
block subset of YAML the workflow is written in (mappings, sequences, plain and quoted scalars,
flow sequences, ``|`` literal blocks, comments). Anything outside it (anchors, flow mappings,
folded blocks, tabs) is an error here, so the file cannot drift into YAML this reader would
misread; where PyYAML is installed its reading must agree.
"""

from __future__ import annotations

import os
import re
import shlex

import pytest

from swafuzz.harness.cli.commands import build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKFLOW = os.path.join(ROOT, "docs", "ci", "github-actions-fuzz.yml")
DOC = os.path.join(ROOT, "docs", "CI.md")


# --------------------------------------------------------------------------- the YAML subset
class YamlSubsetError(ValueError):
    pass


def _scalar(text: str, where: int):
    t = text.strip()
    if not t:
        return None
    if t[0] in "&*!{>|%@`":
        raise YamlSubsetError(f"line {where}: {t[:20]!r} is outside the YAML subset")
    if t[0] in "'\"":
        q = t[0]
        if len(t) < 2 or t[-1] != q:
            raise YamlSubsetError(f"line {where}: unterminated quoted scalar {t!r}")
        body = t[1:-1]
        if q == "'":
            return body.replace("''", "'")
        if "\\" in body:
            raise YamlSubsetError(f"line {where}: escapes in double quotes are outside the subset")
        return body
    if t[0] == "[":
        if not t.endswith("]"):
            raise YamlSubsetError(f"line {where}: a flow sequence must close on its line")
        inner = t[1:-1].strip()
        return [_scalar(x, where) for x in inner.split(",")] if inner else []
    if ": " in t or t.endswith(":"):
        raise YamlSubsetError(f"line {where}: ': ' in a plain scalar (quote it): {t[:40]!r}")
    if re.fullmatch(r"-?[0-9]+", t):
        return int(t)
    return {"true": True, "false": False, "null": None, "~": None}.get(t, t)


def _strip_comment(line: str) -> str:
    out, q = [], None
    for i, ch in enumerate(line):
        if q:
            q = None if ch == q else q
        elif ch in "'\"" and (i == 0 or line[i - 1] in " :[,-"):
            q = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            break
        out.append(ch)
    return "".join(out).rstrip()


def load_yaml(text: str):
    if "\t" in text:
        raise YamlSubsetError("tabs are outside the subset")
    raw = text.split("\n")
    lines: list[tuple[int, int, str]] = []  # (line number, indent, content), blank/comments out
    i = 0
    while i < len(raw):
        line = _strip_comment(raw[i])
        if line.strip():
            ind = len(line) - len(line.lstrip(" "))
            content = line.strip()
            if content.endswith("|") and (content.endswith(": |") or content == "- |"):
                block, j = [], i + 1  # a literal block: the lines indented deeper, verbatim
                while j < len(raw) and (not raw[j].strip()
                                        or len(raw[j]) - len(raw[j].lstrip(" ")) > ind):
                    block.append(raw[j])
                    j += 1
                while block and not block[-1].strip():
                    block.pop()
                cut = min((len(b) - len(b.lstrip(" ")) for b in block if b.strip()), default=0)
                lines.append((i + 1, ind, content[:-1] + "\0" + "\n".join(b[cut:] for b in block)
                              + "\n"))
                i = j
                continue
            lines.append((i + 1, ind, content))
        i += 1
    value, k = _block(lines, 0, lines[0][1] if lines else 0)
    if k != len(lines):
        raise YamlSubsetError(f"line {lines[k][0]}: unexpected indentation")
    return value


def _value(rest: str, lines, k, ind, no):
    if "\0" in rest:  # a literal block read above
        return rest.split("\0", 1)[1], k
    if rest.strip():
        return _scalar(rest, no), k
    if k < len(lines) and lines[k][1] > ind:
        return _block(lines, k, lines[k][1])
    if k < len(lines) and lines[k][1] == ind and lines[k][2].startswith("- "):
        return _block(lines, k, ind)  # a sequence at the key's indentation (GitHub style)
    return None, k


def _block(lines, k, ind):
    if lines[k][2].startswith("- ") or lines[k][2] == "-":
        seq = []
        while k < len(lines) and lines[k][1] == ind and lines[k][2].startswith("-"):
            no, _, content = lines[k]
            item = content[1:].lstrip(" ")
            item_ind = ind + (len(content) - len(item))
            if re.match(r"^[A-Za-z0-9_.${}\- ]+:( |\0|$)", item):  # "- key: value" starts a map
                lines = lines[:k] + [(no, item_ind, item)] + lines[k + 1:]
                v, k = _block(lines, k, item_ind)
            else:
                v, k = _value(item, lines, k + 1, ind, no)
            seq.append(v)
        return seq, k
    out: dict = {}
    while k < len(lines) and lines[k][1] == ind:
        no, _, content = lines[k]
        m = re.match(r"^([A-Za-z0-9_.\-]+|\"[^\"]*\"):( (.*)|\0(.*)|)$", content, re.S)
        if not m:
            raise YamlSubsetError(f"line {no}: expected 'key: value', got {content[:40]!r}")
        key = m.group(1).strip('"')
        if key in out:
            raise YamlSubsetError(f"line {no}: duplicate key {key!r}")
        rest = content[len(m.group(1)) + 1:]
        out[key], k = _value(rest, lines, k + 1, ind, no)
        if k < len(lines) and lines[k][1] > ind:
            raise YamlSubsetError(f"line {lines[k][0]}: unexpected indentation")
    return out, k


# --------------------------------------------------------------------------- the workflow
@pytest.fixture(scope="module")
def wf():
    with open(WORKFLOW) as f:
        return load_yaml(f.read())


def test_reader_agrees_with_pyyaml_where_installed():
    yaml = pytest.importorskip("yaml")
    with open(WORKFLOW) as f:
        text = f.read()
    ours, theirs = load_yaml(text), yaml.safe_load(text)
    theirs["on"] = theirs.pop(True)  # YAML 1.1 reads the key `on` as a boolean
    assert ours == theirs


def test_reader_refuses_yaml_outside_the_subset():
    for text in ("a: &x 1\nb: *x\n", "a: {b: 1}\n", "a: >\n  folded\n", "a:\n\tb: 1\n",
                 "a: 1\na: 2\n"):
        with pytest.raises(YamlSubsetError):
            load_yaml(text)
    assert load_yaml("a:\n- x: 1\n  y: [1, 2]\n- |\n  two\n  lines\nb: 'q # not a comment'\n") \
        == {"a": [{"x": 1, "y": [1, 2]}, "two\nlines\n"], "b": "q # not a comment"}


def _shard_job(wf):
    jobs = [j for j in wf["jobs"].values() if "shard" in (j.get("strategy") or {}).get(
        "matrix", {})]
    assert len(jobs) == 1, "one matrix job over `shard`"
    return jobs[0]


def _runs(job):
    return [s["run"] for s in job["steps"] if "run" in s]


def swafuzz_commands(script: str) -> list[list[str]]:
    """The swafuzz command lines of a ``run:`` script (continuations joined, ``${{ }}`` kept)."""
    out = []
    for line in script.replace("\\\n", " ").split("\n"):
        line = re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", "MATRIX_SHARD", line)
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i, w in enumerate(words):
            if w.endswith("/swafuzz") or w == "swafuzz" or (w == "-m" and i + 1 < len(words)
                                                           and words[i + 1] == "swafuzz"):
                rest = words[i + (2 if w == "-m" else 1):]
                cut = [j for j, x in enumerate(rest) if x in ("||", "&&", "|", ";")]
                out.append(rest[:cut[0]] if cut else rest)
                break
    return out


def test_matrix_covers_every_shard_and_each_runs_its_own(wf):
    job = _shard_job(wf)
    shards = job["strategy"]["matrix"]["shard"]
    n = len(shards)
    assert n >= 2 and shards == list(range(1, n + 1)), shards
    assert job["strategy"].get("fail-fast") is False, "a shard with findings must not cancel the rest"
    runs = [c for r in _runs(job) for c in swafuzz_commands(r) if c[:1] == ["run"]]
    assert len(runs) == 1
    run = runs[0]
    assert run[run.index("--shard") + 1] == f"MATRIX_SHARD/{n}"
    assert "--out" in run


def test_gpu_labels_sglang_install_and_uploads(wf):
    job = _shard_job(wf)
    labels = job["runs-on"]
    assert isinstance(labels, list) and "self-hosted" in labels and "gpu" in labels
    script = "\n".join(_runs(job))
    assert re.search(r"pip install [^\n]*sglang==", script), "the SGLang install step"
    out = next(c for r in _runs(job) for c in swafuzz_commands(r) if c[:1] == ["run"])
    out_dir = out[out.index("--out") + 1]
    assert ["--target", "sglang"] == out[out.index("--target"):out.index("--target") + 2]
    reports = [c for r in _runs(job) for c in swafuzz_commands(r) if c[:1] == ["report"]]
    assert reports and reports[0][1] == out_dir, "junit.xml of the shard (swafuzz report)"
    ups = [s for s in job["steps"] if str(s.get("uses", "")).startswith(
        "actions/upload-artifact@")]
    assert ups and ups[0].get("if") == "always()", "upload even when the run found something"
    assert ups[0]["with"]["path"].rstrip("/") == out_dir, "the run directory: bundles, junit.xml"
    assert "${{ matrix.shard }}" in ups[0]["with"]["name"], "one artifact per shard"


def test_merge_job_downloads_every_shard_and_gates(wf):
    shard_name = next(k for k, j in wf["jobs"].items() if j is _shard_job(wf))
    merge = [j for j in wf["jobs"].values() if j.get("needs") in (shard_name, [shard_name])]
    assert len(merge) == 1
    job = merge[0]
    assert job.get("if") == "always()", "the gate runs even when a shard job failed"
    up_name = _shard_job(wf)["steps"]
    up_name = next(s for s in up_name if "upload-artifact" in str(s.get("uses")))["with"]["name"]
    down = [s for s in job["steps"] if str(s.get("uses", "")).startswith(
        "actions/download-artifact@")]
    assert down and down[0]["with"]["pattern"] == up_name.replace("${{ matrix.shard }}", "*")
    dest = down[0]["with"]["path"]
    merges = [c for r in _runs(job) for c in swafuzz_commands(r) if c[:1] == ["merge"]]
    assert len(merges) == 1
    m = merges[0]
    assert f"{dest}/{up_name.replace('${{ matrix.shard }}', '*')}" in m
    step = next(s for s in job["steps"] if "swafuzz merge" in s.get("run", ""))
    assert "if" not in step and "continue-on-error" not in step, "merge's exit code is the gate"
    assert "|| " not in step["run"], "nothing swallows merge's exit code"
    assert any("junit.xml" in str(s.get("with", {}).get("path", "")) for s in job["steps"]
               if "upload-artifact" in str(s.get("uses")))


def _help_flags(cmd: str, capsys) -> set[str]:
    with pytest.raises(SystemExit):
        build_parser().parse_args([cmd, "--help"])
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", capsys.readouterr().out))


def test_every_swafuzz_command_is_real(wf, capsys):
    cmds = [c for j in wf["jobs"].values() for r in _runs(j) for c in swafuzz_commands(r)]
    assert {c[0] for c in cmds} >= {"run", "report", "merge"}
    n = len(_shard_job(wf)["strategy"]["matrix"]["shard"])
    for c in cmds:
        if c[0].startswith("--"):  # swafuzz --version
            assert c == ["--version"]
            continue
        flags = _help_flags(c[0], capsys)
        for w in c[1:]:
            if w.startswith("--"):
                assert w.split("=")[0] in flags, f"swafuzz {c[0]}: no flag {w} (--help: {flags})"
        for i in range(1, n + 1):  # the parser takes it as written, for every shard
            args = [w.replace("MATRIX_SHARD", str(i)).replace("${SWAFUZZ_SEED}", "0")
                    for w in c]
            build_parser().parse_args(args)
    # and --shard accepts each matrix value (the CLI's own check, not argparse's)
    from swafuzz.harness.fleet.shard import parse_shard

    assert [parse_shard(f"{i}/{n}") for i in range(1, n + 1)] == [[i, n]
                                                                 for i in range(1, n + 1)]
    assert main(["run", "--shard", f"{n + 1}/{n}"]) == 2


def test_doc_shows_this_workflow():
    with open(DOC) as f:
        doc = f.read()
    with open(WORKFLOW) as f:
        text = f.read()
    m = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert m, "docs/CI.md shows the workflow in a yaml block"
    assert m.group(1) == text, "docs/CI.md's workflow and docs/ci/github-actions-fuzz.yml differ"
