"""The target's functions of interest in a ``--coverage`` run (its ``coverage_focus`` hook: a
``module:attr`` ref to patterns ``module:qualname``, the qualname an ``fnmatch`` glob, and
``!glob`` patterns excluding the functions whose own name matches): which of
them the release has, which the Cases called and how many of their branches they reached, and
each one's never-reached branches (``coverage.json``'s ``focus``, the head of ``coverage.md``).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
from typing import Any, Callable

from swafuzz import features, targets


def patterns_of(target: str) -> list[str] | None:
    """``target``'s focus patterns, or None (no ``coverage_focus`` hook)."""
    ref = getattr(targets.find_target(target), "coverage_focus", None)
    return list(features.load(ref)) if ref else None


def module_files(patterns: list[str]) -> list[str]:
    """The source files of the patterns' modules that exist here (found without importing
    them: their package's directory), for the report to cover even when no Case ran them."""
    out = []
    for mod in dict.fromkeys(p.split(":", 1)[0] for p in patterns if not p.startswith("!")):
        top, *rest = mod.split(".")
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        base = os.path.join(spec.submodule_search_locations[0], *rest)
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                out.append(path)
                break
    return out


def focus_summary(report: dict[str, Any], functions: dict[str, dict[str, int]],
                  patterns: list[str], module_name: Callable[[str], str]) -> dict[str, Any]:
    """From coverage.py's JSON report (the Cases' contexts only) and the per-function Case
    counts (:func:`swafuzz.harness.pipeline.coverage.function_cases`; ``module_name``: a
    file's dotted module): per matched function its Cases, branches, reached branches and
    never-reached arcs; the totals; absent patterns."""
    found: dict[str, dict[str, Any]] = {}
    hit: set[str] = set()
    excluded = [p[1:] for p in patterns if p.startswith("!")]
    patterns = [p for p in patterns if not p.startswith("!")]
    for path, rec in report.get("files", {}).items():
        mod = module_name(path)
        for name, r in rec.get("functions", {}).items():
            if not name:
                continue
            key = f"{mod}:{name}"
            pats = [p for p in patterns if p.split(":", 1)[0] == mod
                    and fnmatch.fnmatchcase(name, p.split(":", 1)[1])]
            if not pats or any(fnmatch.fnmatchcase(name.rsplit(".", 1)[-1], x)
                               for x in excluded):
                continue
            hit.update(pats)
            s = r["summary"]
            found[key] = {"cases": functions.get(key, {}).get("cases", 0),
                          "branches": s.get("num_branches", 0),
                          "covered_branches": s.get("covered_branches", 0),
                          "missing_branches": r.get("missing_branches", [])}
    tot = {"functions": len(found), "called": sum(1 for f in found.values() if f["cases"]),
           "branches": sum(f["branches"] for f in found.values()),
           "covered_branches": sum(f["covered_branches"] for f in found.values())}
    tot["called_branches"] = sum(f["branches"] for f in found.values() if f["cases"])
    return {"total": tot, "functions": dict(sorted(found.items())),
            "absent": [p for p in patterns if p not in hit]}


def share(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else f"{a}/{b}"


def render_focus(focus: dict[str, Any]) -> str:
    """``coverage.md``'s head: the focus functions' shares, the never-called ones and the
    never-reached branches of the called ones."""
    t = focus["total"]
    lines = ["## The target's functions of interest (coverage_focus)", "",
             f"Functions called: {share(t['called'], t['functions'])}; branches reached: "
             f"{share(t['covered_branches'], t['branches'])} of all of them, "
             f"{share(t['covered_branches'], t['called_branches'])} within the called ones.",
             "", "| function | Cases | branches reached | never-reached arcs |",
             "|---|---|---|---|"]
    for name, f in focus["functions"].items():
        arcs = ", ".join(f"{a}->{b}" for a, b in f["missing_branches"])
        lines.append(f"| `{name}` | {f['cases']} | {f['covered_branches']}/{f['branches']} | "
                     f"{arcs or '-'} |")
    if focus["absent"]:
        lines += ["", "Patterns this release has no function for: "
                  + ", ".join(f"`{p}`" for p in focus["absent"])]
    return "\n".join(lines) + "\n"
