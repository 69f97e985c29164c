"""What ``swafuzz report`` reads and what a run leaves for it: ``run.json`` (written by
:func:`write_run_meta`: commit, versions, device, budget, timings), ``cases.jsonl``
(:func:`read_log`) and ``findings/*.json`` (:func:`read_bundles`); an unreadable input is a
:class:`ReportInputError` naming the file (the CLI exits 2 with it).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from swafuzz import targets
from swafuzz.reports.bundle import atomic_write_text, versions


class ReportInputError(ValueError):
    """DIR (or a file in it) cannot be read: the CLI exits 2 with this message."""


def git_commit() -> str | None:
    """The commit of the checkout swafuzz runs from, if it is a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    c = r.stdout.strip()
    try:
        d = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10)
        if d.returncode == 0 and d.stdout.strip():
            c += "+dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return c


def write_run_meta(out: str, meta: dict[str, Any]) -> str:
    """``OUT/run.json``: what ran (for ``report``): commit, versions, device, budget, timings."""
    path = os.path.join(out, "run.json")
    vers = versions()
    for name in str(meta.get("target", "")).replace(",", " ").split():
        vers.update(targets.versions(name))  # what a target drives (its ``versions`` hook)
    data = {"commit": git_commit(), "versions": vers, **meta}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def read_json(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ReportInputError(f"{path}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ReportInputError(f"{path}: not valid JSON ({e})") from None


def read_log(path: str, events: bool = False) -> list[dict[str, Any]]:
    """Case rows of ``cases.jsonl`` (``events``: its event rows instead, e.g. the pipeline's
    ``unit_done`` rows); a torn last line (a killed run) is skipped, any other bad line is an
    input error naming the line."""
    rows: list[dict[str, Any]] = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 1:  # the last line, torn by a kill
                continue
            raise ReportInputError(f"{path}: line {i} is not valid JSON") from None
        if not isinstance(row, dict):
            raise ReportInputError(f"{path}: line {i} is not a JSON object")
        if ("event" in row) == events:  # "event": a unit summary row of the run, not a case
            rows.append(row)
    return rows


def read_bundles(d: str) -> list[tuple[str, dict[str, Any]]]:
    fdir = os.path.join(d, "findings")
    out = []
    if not os.path.isdir(fdir):
        return out
    for name in sorted(os.listdir(fdir)):
        if name.endswith(".json") and not name.startswith("."):
            b = read_json(os.path.join(fdir, name))
            if not isinstance(b, dict) or "signature" not in b:
                raise ReportInputError(f"{os.path.join(fdir, name)}: field 'signature' is "
                                       "required (a bundle written by swafuzz)")
            out.append((os.path.join(fdir, name), b))
    return out
