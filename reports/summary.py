"""Plain-text / Markdown tables: the campaign's closing table and the zoo's kill matrix."""

from __future__ import annotations

from typing import Any, Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if markdown:
        lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:]]
    else:
        lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip(),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells[1:]]
    return "\n".join(lines)


def campaign_table(stats: dict[str, dict[str, Any]], markdown: bool = False) -> str:
    """``stats[kind] = {"cases", "checks", "findings", "seconds"}`` -> closing table."""
    rows = []
    tot = {"cases": 0, "checks": 0, "findings": 0, "seconds": 0.0}
    for kind in sorted(stats):
        s = stats[kind]
        rows.append([kind, s["cases"], s["checks"], s["findings"], f"{s['seconds']:.1f}"])
        for k in tot:
            tot[k] += s[k]
    rows.append(["total", tot["cases"], tot["checks"], tot["findings"], f"{tot['seconds']:.1f}"])
    return table(["scenario kind", "cases", "checks run", "findings", "seconds"], rows, markdown)


def kill_matrix(result: dict[str, Any], markdown: bool = False) -> str:
    """``result`` as written by ``swafuzz zoo --json`` -> the kill matrix table."""
    rows = []
    c = result["control"]
    rows.append(["unified (control)", "clean" if c["clean"] else "FAILED", c.get("cases", ""), "",
                 f"{c['seconds']:.1f}", c.get("check") or "", "", ""])
    for m in result["mutants"]:
        shr = m.get("shrunk") or {}
        size = f"{shr.get('requests', '?')}r/{shr.get('steps', '?')}s" if shr else ""
        rows.append([m["name"], "killed" if m["killed"] else "SURVIVED",
                     m.get("cases_to_kill", ""), m.get("kills", ""), f"{m['seconds']:.1f}",
                     m.get("check") or "", size, m.get("repro") or ""])
    return table(["mutant", "verdict", "cases to kill (median)", "seeds killed", "seconds",
                  "check", "shrunk", "repro"], rows, markdown)
