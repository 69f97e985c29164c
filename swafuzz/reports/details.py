"""What summary.md, summary.html and junit.xml show of one finding bundle, as plain text.

``view(rel_path, bundle, ledger_ids)`` -> ``{"path", "repro", "ledger", "shrunk", "kind", "pool",
"steps", "steps_left_out", "failures", "failures_left_out", "check", "message"}``; ``repro`` is
relative to the run directory; steps and failing checks are capped (:data:`MAX_STEPS`,
:data:`MAX_FAILURES`, the number left out said) so one huge bundle cannot crowd out the others.
"""

from __future__ import annotations

import json
from typing import Any

from swafuzz.reports.dedup import case_size

MAX_STEPS = 60
MAX_FAILURES = 40


def repro_text(v: dict[str, Any]) -> str:
    """A view's repro line, or why there is none: a signature only logged (met while shrinking
    another finding) has no bundle; its smallest logged Case is shown instead."""
    if v.get("repro"):
        return v["repro"]
    return (f"none: no bundle was written for this signature (a failure met while shrinking "
            f"another); its smallest Case, below, is {v['path']}")


def step_text(i: int, step: Any) -> str:
    """``'2: dp_decode exec="eager" rank_tokens=[2] rids=[0]'``: the op, then the other fields
    (sorted, JSON values)."""
    if not isinstance(step, dict):
        return f"{i}: {json.dumps(step)}"
    rest = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(step.items())
                    if k != "op")
    return f"{i}: {step.get('op', '?')}" + (f" {rest}" if rest else "")


def pool_text(case: dict[str, Any]) -> str:
    pool = case.get("pool")
    if not isinstance(pool, dict):
        return "-"
    return ", ".join(f"{k} {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(pool.items()))


def failure_text(f: Any) -> str:
    """``'write_targets (step 1, fwd 0, dummy): message'``."""
    if not isinstance(f, dict):
        return str(f)
    where = [w for w in (f"step {f['step']}" if f.get("step") is not None else "",
                         f"fwd {f['fwd']}" if f.get("fwd") is not None else "",
                         str(f.get("slot_class") or "")) if w]
    return f"{f.get('check', '?')}" + (f" ({', '.join(where)})" if where else "") \
        + f": {f.get('message', '')}"


def view(rel_path: str, bundle: dict[str, Any], ledger_ids: list[str]) -> dict[str, Any]:
    case = bundle.get("case") if isinstance(bundle.get("case"), dict) else {}
    steps = case.get("steps") if isinstance(case.get("steps"), list) else []
    fails = bundle.get("failures")
    if not isinstance(fails, list) or not fails:  # a bundle of before 'failures': its first
        fails = [{"check": bundle.get("check") or "?", "message": bundle.get("message") or ""}]
    n_steps, n_requests, _ = case_size({**case, "steps": steps})
    return {"path": rel_path, "repro": f"swafuzz repro {rel_path}", "ledger": list(ledger_ids),
            "shrunk": {"steps": n_steps, "requests": n_requests},
            "kind": case.get("kind") or "?", "pool": pool_text(case),
            "steps": [step_text(i, s) for i, s in enumerate(steps[:MAX_STEPS])],
            "steps_left_out": max(0, len(steps) - MAX_STEPS),
            "failures": [failure_text(f) for f in fails[:MAX_FAILURES]],
            "failures_count": len(fails),
            "failures_left_out": max(0, len(fails) - MAX_FAILURES),
            "check": bundle.get("check"), "message": bundle.get("message") or ""}
