"""The case log ``OUT/cases.jsonl`` (schema version :data:`LOG_VERSION`, rows described in
:mod:`swafuzz.harness.pipeline.driver`): appending rows, reading them back, summing unit rows per kind."""

from __future__ import annotations

import json
import os
from typing import Any

LOG_VERSION = 1


class CaseLog:
    """Appends rows to ``cases.jsonl`` (one ``os.write`` per row, ``O_APPEND``)."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, row: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps({"v": LOG_VERSION, **row}) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)


def repair_log(path: str) -> int:
    """Cut a torn last line (a kill -9 in the middle of a row's ``write``: no newline at the
    end) off the log, so that the next row starts on a line of its own; the torn row was never
    recorded (its case runs again). Returns the bytes removed. Call it only while no other
    process appends (the run directory's lock, :mod:`swafuzz.harness.pipeline.runlock`)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return 0
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return 0
        keep, pos, chunk = 0, size, 1 << 16
        while pos > 0:  # the last newline, read backwards in chunks
            start = max(0, pos - chunk)
            f.seek(start)
            i = f.read(pos - start).rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            pos = start
        f.truncate(keep)
    return size - keep


def read_log(path: str) -> list[dict[str, Any]]:
    """Rows of a case log; a torn last line (kill -9 mid-write) is ignored."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def unit_rows(log_rows: list[dict[str, Any]],
              known: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Every unit's row as far as the log (and ``known``, rows this process holds that the log
    may lack) tells: a finished unit's own row, and for a unit with logged Cases but no row yet
    (interrupted, or running on another machine) a row summing its case rows, marked
    ``"partial": true`` (no finding: its search did not end)."""
    done: dict[str, dict[str, Any]] = {}
    for r in list(log_rows) + list(known):
        if r.get("event") == "unit_done" and "unit" in r:
            done[r["unit"]] = r
    part: dict[str, dict[str, Any]] = {}
    for r in log_rows:
        if "case" not in r or r.get("unit") in done:
            continue
        u = part.setdefault(r["unit"], {
            "unit": r["unit"], "event": "unit_done", "partial": True, "target": r.get("target"),
            "kind": r.get("kind"), "seed": r.get("seed"), "cases": 0, "generated": 0,
            "shrunk": 0, "replayed": 0, "checks": 0, "forward_steps": 0, "seconds": 0.0,
            "finding": None, "out_of_time": False})
        u["cases"] += 1
        u["shrunk" if r.get("phase") == "shrink" else "generated"] += 1
        u["checks"] += r.get("checks") or 0
        u["forward_steps"] += r.get("forward_steps") or 0
        u["seconds"] = round(u["seconds"] + (r.get("seconds") or 0.0), 4)
    return list(done.values()) + list(part.values())


def checked_steps(log_rows: list[dict[str, Any]], unit_rows: list[dict[str, Any]]) -> int:
    """Forward steps checked by every session of a run: the sum over the case rows (each
    executed Case is logged once, whichever session ran it); for a log whose case rows do not
    carry ``forward_steps`` (written before they did), the unit rows' sum."""
    cases = [r for r in log_rows if "case" in r]
    if cases and all("forward_steps" in r for r in cases):
        return sum(r["forward_steps"] for r in cases)
    return sum(r.get("forward_steps") or 0 for r in unit_rows)


def per_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Unit rows summed per kind (per target and kind when a run has several targets)."""
    stats: dict[str, dict[str, Any]] = {}
    multi = len({r.get("target") for r in rows}) > 1
    for r in rows:
        key = f"{r.get('target')} {r['kind']}" if multi else r["kind"]
        s = stats.setdefault(key, {"cases": 0, "generated": 0, "shrunk": 0, "checks": 0,
                                         "findings": 0, "seconds": 0.0})
        if r.get("known"):  # harness.ledger.known: Cases per ledger entry
            for e, n in r["known"].items():
                s.setdefault("known", {})[e] = s.get("known", {}).get(e, 0) + n
        for k in ("generated", "shrunk", "checks", "seconds"):
            s[k] += r.get(k) or 0
        s["cases"] += (r.get("generated") or 0) + (r.get("shrunk") or 0)  # replayed included
        s["findings"] += 1 if r.get("finding") else 0
    return stats



def examples_note(asked: int | None, rows: list[dict[str, Any]], generated: int) -> str | None:
    """Why a run generated fewer Cases than the ``asked`` its units were given (None: exactly
    that many, no cap (``--budget``), or an interrupted run): the units a finding, the
    budget or the ledger's cap ended early, and the kinds Hypothesis could not draw enough
    distinct valid Cases of."""
    if asked is None or generated >= asked or any(r.get("partial") for r in rows):
        return None
    why = []
    for label, hit in (("a finding ends its unit's search", lambda r: r.get("finding")),
                       ("--budget ran out", lambda r: r.get("out_of_time")),
                       ("the ledger's --known-cap", lambda r: r.get("stopped"))):
        n = sum(1 for r in rows if hit(r))
        if n:
            why.append(f"{label} ({n} unit{'s' if n > 1 else ''})")
    why += [r["short"] for r in rows if r.get("short")]
    return (f"examples: {generated} of {asked} Cases generated: "
            + ("; ".join(why) or "units did not run (see above)"))
