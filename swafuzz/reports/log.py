"""The per-case JSONL log: one line per executed case (kind, outcome, seconds, signatures)."""

from __future__ import annotations

import json
import os
from typing import Any


class CaseLog:
    """Append-only JSONL; each line is flushed and fsynced so a crash loses nothing written."""

    def __init__(self, path: str | None):
        self.path = path
        self._f = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._f = open(path, "a")

    def write(self, record: dict[str, Any]) -> None:
        if self._f is None:
            return
        self._f.write(json.dumps(record, sort_keys=True) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
