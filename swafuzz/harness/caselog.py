"""The case log ``OUT/cases.jsonl`` (schema version :data:`LOG_VERSION`, rows described in
:mod:`swafuzz.harness.pipeline`): appending rows, reading them back, summing unit rows per kind."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

LOG_VERSION = 1


def case_key(case_json: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case_json, sort_keys=True).encode()).hexdigest()


class CaseLog:
    """Appends rows to ``cases.jsonl`` (one ``os.write`` per row, ``O_APPEND``)."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, row: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps({"v": LOG_VERSION, **row}) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)


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


def per_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Unit rows summed per kind (per target and kind when a run has several targets)."""
    stats: dict[str, dict[str, Any]] = {}
    multi = len({r.get("target") for r in rows}) > 1
    for r in rows:
        key = f"{r.get('target')} {r['kind']}" if multi else r["kind"]
        s = stats.setdefault(key, {"cases": 0, "generated": 0, "shrunk": 0, "checks": 0,
                                         "findings": 0, "seconds": 0.0})
        if r.get("known"):  # harness.known: Cases per ledger entry
            for e, n in r["known"].items():
                s.setdefault("known", {})[e] = s.get("known", {}).get(e, 0) + n
        for k in ("generated", "shrunk", "checks", "seconds"):
            s[k] += r.get(k) or 0
        s["cases"] += (r.get("generated") or 0) + (r.get("shrunk") or 0)  # replayed included
        s["findings"] += 1 if r.get("finding") else 0
    return stats
