"""Deduplication of findings by signature.

Inputs are plain records: the rows of ``cases.jsonl`` (failing rows carry ``signature``, the
``case`` and, where logged, ``t``) and the bundles of ``findings/``. A :class:`FindingGroup` per
signature holds ``count`` (failing cases logged with it, shrinking runs included),
``first_seen`` / ``last_seen`` (1-based row numbers and times), ``case`` (the smallest Case among
the rows and bundles: fewest steps, then requests, then shortest JSON), ``bundles`` (every bundle
of the signature, in path order: one per ledger entry that knows it, ``.known-<entry>``) with
``bundle`` / ``bundle_path`` the one holding the smallest Case, and ``reliability`` (``(k, n)``
reruns failing the same way, when measured by ``swafuzz report --reruns N``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable


def case_size(case: dict[str, Any]) -> tuple[int, int, int]:
    """(steps, requests, JSON length) of a Case in its JSON form: the order 'smallest' uses."""
    steps = case.get("steps") or []
    rids: set[int] = set()
    for s in steps:
        if isinstance(s, dict):
            if s.get("rid") is not None:
                rids.add(s["rid"])
            rids.update(s.get("rids") or [])
    return (len(steps), len(rids), len(json.dumps(case, sort_keys=True)))


@dataclass
class FindingGroup:
    signature: str
    count: int = 0
    first_seen: int | None = None  # 1-based row number in cases.jsonl
    last_seen: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    case: dict[str, Any] | None = None
    bundle: dict[str, Any] | None = None  # the bundle with the smallest Case (from findings/)
    bundle_path: str | None = None
    bundles: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # every bundle
    case_row: int | None = None  # the log row (1-based) ``case`` is from; None: a bundle's
    case_verdict: dict[str, Any] | None = None  # that row's verdict (failures, observed)
    message: str = ""
    reliability: tuple[int, int] | None = None
    kinds: set[str] = field(default_factory=set)

    def consider(self, case: dict[str, Any] | None, row: int | None = None,
                 verdict: Any = None) -> None:
        if case is not None and (self.case is None or case_size(case) < case_size(self.case)):
            self.case, self.case_row = case, row
            self.case_verdict = verdict if isinstance(verdict, dict) else None

    def to_json(self) -> dict[str, Any]:
        return {"signature": self.signature, "count": self.count, "first_seen": self.first_seen,
                "last_seen": self.last_seen, "first_time": self.first_time,
                "last_time": self.last_time, "message": self.message,
                "reliability": list(self.reliability) if self.reliability else None,
                "bundle": self.bundle_path, "bundles": [p for p, _ in self.bundles],
                "shrunk": _summary(self.case),
                "kinds": sorted(self.kinds)}


def _summary(case: dict[str, Any] | None) -> dict[str, int] | None:
    if case is None:
        return None
    steps, requests, _ = case_size(case)
    return {"steps": steps, "requests": requests}


def group(rows: Iterable[dict[str, Any]],
          bundles: Iterable[tuple[str, dict[str, Any]]] = ()) -> list[FindingGroup]:
    """Group failing log rows and ``(path, bundle)`` pairs by signature; sorted by signature."""
    groups: dict[str, FindingGroup] = {}
    for i, row in enumerate(rows, start=1):
        if not row.get("failed") or not row.get("signature"):
            continue
        g = groups.setdefault(row["signature"], FindingGroup(row["signature"]))
        g.count += 1
        if g.first_seen is None:
            g.first_seen, g.first_time = i, row.get("t")
        g.last_seen, g.last_time = i, row.get("t")
        if row.get("kind"):
            g.kinds.add(row["kind"])
        g.consider(row.get("case"), i, row.get("verdict"))
    for path, b in bundles:
        sig = b.get("signature")
        if not sig:
            continue
        g = groups.setdefault(sig, FindingGroup(sig))
        g.bundles.append((path, b))
        case = b.get("case")
        if isinstance(case, dict):
            g.kinds.add(case.get("kind") or "")
            g.kinds.discard("")
        g.consider(case if isinstance(case, dict) else None)
    for g in groups.values():
        g.bundles.sort(key=lambda pb: pb[0])
        if g.bundles:
            g.bundle_path, g.bundle = min(g.bundles, key=lambda pb: bundle_size(pb[1]))
            g.message = g.bundle.get("message") or g.message
    return [groups[k] for k in sorted(groups)]


def bundle_size(b: dict[str, Any]) -> tuple[int, int, int]:
    """:func:`case_size` of a bundle's Case; a bundle without a Case sorts last."""
    case = b.get("case")
    return case_size(case) if isinstance(case, dict) else (1 << 30, 1 << 30, 1 << 30)


def classify(current: Iterable[str], baseline: Iterable[str] | None) -> dict[str, list[str]]:
    """Signatures ``new`` (not in the baseline), ``known`` (in both) and ``fixed`` (baseline
    only). Without a baseline every current signature is new."""
    cur = sorted(set(current))
    if baseline is None:
        return {"new": cur, "known": [], "fixed": []}
    base = set(baseline)
    return {"new": [s for s in cur if s not in base], "known": [s for s in cur if s in base],
            "fixed": sorted(base - set(cur))}
