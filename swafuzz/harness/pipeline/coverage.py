"""Coverage of the code under test (``swafuzz run --coverage``; coverage.py, ``swafuzz[coverage]``).

Each case worker child measures line and branch coverage of the target's packages
(:func:`sources_for`) into its own file under ``OUT/coverage/``, from once the target is loaded.
After every Case it flushes and reports how many arcs no earlier Case reached (``--coverage-bias``:
a Hypothesis ``target()`` score). :func:`combine` writes ``OUT/coverage.json`` and
``OUT/coverage.md``: per *driven* module (a Case called one of its functions) the lines and
branches covered inside its functions, and per function what was never reached; ``swafuzz
report`` appends ``coverage.md`` as it is.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from typing import Any

from swafuzz import targets
from swafuzz.harness.pipeline.coverage_focus import focus_summary, module_files, render_focus

#: what is measured for swafuzz's own targets (no ``versions`` hook): its targets and kernels
OWN_SOURCES = ["swafuzz.targets", "swafuzz.kernels"]
COVERAGE_DIR = "coverage"
#: the coverage context of each Case run in a child (``case.PID.N``); only these are reported
CASE_CONTEXT = "case."


class CoverageMissing(RuntimeError):
    """coverage.py is not installed (a usage error of ``--coverage``)."""


def require() -> None:
    """Raise :class:`CoverageMissing` with the install hint when coverage.py is absent."""
    try:
        import coverage  # noqa: F401
    except ImportError as e:
        raise CoverageMissing("--coverage: coverage.py is not installed (pip install "
                              "'swafuzz[coverage]', or pip install coverage)") from e


def run_mode(args) -> str | None:
    """``--coverage`` / ``--coverage-bias`` -> RunConfig.coverage (``on`` / ``bias`` / None);
    :class:`CoverageMissing` (a usage error: flag and why) when it cannot be measured."""
    if not (getattr(args, "coverage", False) or getattr(args, "coverage_bias", False)):
        return None
    flag = "--coverage-bias" if args.coverage_bias else "--coverage"
    if args.no_isolate or getattr(args, "ray", None) is not None:
        raise CoverageMissing(f"{flag}: measured in the local case workers: not with "
                              f"{'--no-isolate' if args.no_isolate else '--ray'}")
    require()
    return "bias" if args.coverage_bias else "on"


def sources_for(target: str) -> list[str]:
    """The packages measured for ``target``: those its ``versions`` hook names (the code it
    drives: an upstream target's package), else :data:`OWN_SOURCES`."""
    names = [n.replace("-", "_") for n in targets.versions(target)]
    return names or list(OWN_SOURCES)


class ChildCoverage:
    """The measurement inside one case worker child."""

    def __init__(self, data_dir: str, sources: list[str]):
        import coverage
        os.makedirs(data_dir, exist_ok=True)
        self.cov = coverage.Coverage(data_file=os.path.join(data_dir, ".coverage"),
                                     data_suffix=True, branch=True, source_pkgs=sources,
                                     config_file=False)
        # the target's packages were imported by design before measuring started
        self.cov.set_option("run:disable_warnings", ["module-not-measured"])
        self.seen, self.cases = 0, 0
        self.cov.start()
        self.cov.switch_context("setup")  # until the first Case: not counted as a Case's

    def before_case(self) -> None:
        """What runs from here on is this Case's (a coverage context ``case.PID.N``: the
        per-function Case counts of :func:`combine`)."""
        self.cases += 1
        self.cov.switch_context(f"{CASE_CONTEXT}{os.getpid()}.{self.cases}")

    def after_case(self) -> int:
        """Flush this child's data; the number of arcs no earlier Case of this child reached."""
        data = self.cov.get_data()
        total = sum(len(data.arcs(f) or ()) for f in data.measured_files())
        new, self.seen = total - self.seen, total
        return new

    def stop(self) -> None:
        self.cov.stop()
        self.cov.save()


def combine(out: str, focus: list[str] | None = None) -> dict[str, Any] | None:
    """Merge ``OUT/coverage/.coverage.*`` into ``OUT/coverage.json`` and ``OUT/coverage.md``;
    the summary (:func:`summarize`; what Cases ran, not the target's import or setup: the
    ``case.*`` contexts only), or None when no child wrote data. ``focus``: the target's
    functions of interest (``module:qualname``; :mod:`swafuzz.harness.pipeline.coverage_focus`)."""
    import coverage
    data_dir = os.path.join(out, COVERAGE_DIR)
    files = sorted(glob.glob(os.path.join(data_dir, ".coverage.*")))
    if not files:
        return None
    cov = coverage.Coverage(data_file=os.path.join(data_dir, ".coverage"), branch=True,
                            config_file=False)
    cov.combine(files, keep=True)
    cov.save()
    raw = os.path.join(data_dir, "raw.json")
    # only the files a Case ran a line of (the report parses every file it is given: all the
    # modules the target imported after measuring began took 93 of 98 s for 6 Cases), and the
    # focus modules, reported even where no Case ran them
    data = cov.get_data()
    data.set_query_contexts([r"^case\."])
    ran = {f for f in data.measured_files() if data.lines(f)}
    data.set_query_contexts(None)
    morfs = sorted(ran | (set(module_files(focus)) if focus is not None else set()))
    cov.json_report(morfs=morfs, outfile=raw, ignore_errors=True,
                    contexts=[r"^case\."])  # CASE_CONTEXT
    with open(raw) as f:
        report = json.load(f)
    os.unlink(raw)
    summary = summarize(report)
    summary["functions"] = function_cases(cov.get_data(), report)
    if focus is not None:
        summary["focus"] = focus_summary(report, summary["functions"], focus, module_name)
    with open(os.path.join(out, "coverage.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "coverage.md"), "w") as f:
        if focus is not None:
            f.write(render_focus(summary["focus"]) + "\n")
        f.write(render_md(summary))
    return summary


def function_cases(data, report: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per called function (``module:qualname``), the number of Cases that ran a line of it
    (``cases``: distinct ``case.*`` contexts) and its branches (``branches``,
    ``covered_branches``), from the combined data and coverage.py's JSON report (already
    limited to the Cases' contexts)."""
    out: dict[str, dict[str, int]] = {}
    for path, rec in report.get("files", {}).items():
        funcs = {n: r for n, r in rec.get("functions", {}).items() if n and r.get("executed_lines")}
        if not funcs:
            continue
        by_line = data.contexts_by_lineno(os.path.abspath(path))  # (the report's: relative)
        mod = module_name(path)
        for name, r in funcs.items():
            ctx = set()
            for ln in r["executed_lines"]:
                ctx.update(c for c in by_line.get(ln, ()) if c.startswith(CASE_CONTEXT))
            out[f"{mod}:{name}"] = {"cases": len(ctx),
                                    "branches": r["summary"].get("num_branches", 0),
                                    "covered_branches": r["summary"].get("covered_branches", 0)}
    return dict(sorted(out.items()))


def module_name(path: str) -> str:
    """The dotted module name of a source file: relative to the longest ``sys.path`` entry
    holding it (else to its ``site-packages``)."""
    path = os.path.abspath(path)
    roots = sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True)
    root = next((r for r in roots if path.startswith(r.rstrip(os.sep) + os.sep)), None)
    parts = os.path.normpath(os.path.relpath(path, root) if root else path).split(os.sep)
    for site in ("site-packages", "dist-packages"):
        if site in parts:
            parts = parts[parts.index(site) + 1:]
            break
    name = ".".join(parts)
    return name[:-3] if name.endswith(".py") else name


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """From coverage.py's JSON report: the driven modules, each with lines / branches covered
    and its functions that were called with what they never reached, plus the functions of
    the module never called at all."""
    mods = []
    for path, rec in sorted(report.get("files", {}).items()):
        funcs = {n: r for n, r in rec.get("functions", {}).items() if n}
        called = {n: r for n, r in funcs.items() if r.get("executed_lines")}
        if not called:
            continue  # imported (its defs ran) but nothing in it was called: not driven
        partial = []
        for name, r in sorted(called.items()):
            miss_l, miss_b = r.get("missing_lines", []), r.get("missing_branches", [])
            if miss_l or miss_b:
                partial.append({"function": name, "missing_lines": miss_l,
                                "missing_branches": miss_b,
                                "branches": r["summary"].get("num_branches", 0),
                                "covered_branches": r["summary"].get("covered_branches", 0)})
        partial.sort(key=lambda p: (-len(p["missing_branches"]), -len(p["missing_lines"])))
        tot = {k: sum(r["summary"].get(k, 0) for r in funcs.values())
               for k in ("num_statements", "covered_lines", "num_branches", "covered_branches")}
        inn = {k: sum(r["summary"].get(k, 0) for r in called.values())
               for k in ("num_statements", "num_branches", "covered_branches")}
        mods.append({"module": module_name(path), "path": path,
                     "lines": tot["num_statements"], "covered_lines": tot["covered_lines"],
                     "branches": tot["num_branches"], "covered_branches": tot["covered_branches"],
                     "functions": len(funcs), "called": len(called),
                     "called_lines": inn["num_statements"],
                     "called_branches": inn["num_branches"],
                     "partial": partial,
                     "never_called": sorted(n for n in funcs if n not in called)})
    tot = {k: sum(m[k] for m in mods)
           for k in ("lines", "covered_lines", "branches", "covered_branches", "functions",
                     "called", "called_lines", "called_branches")}
    return {"modules": mods, "total": tot}


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "-"


def render_md(summary: dict[str, Any], top: int = 8) -> str:
    """The coverage section of the report (markdown)."""
    t = summary["total"]
    lines = ["## Coverage of the code under test", "",
             f"Driven modules: {len(summary['modules'])}; lines {t['covered_lines']}/"
             f"{t['lines']} ({pct(t['covered_lines'], t['lines'])}), branches "
             f"{t['covered_branches']}/{t['branches']} "
             f"({pct(t['covered_branches'], t['branches'])}) in all their functions; "
             f"{t['called']} of {t['functions']} functions called, within them lines "
             f"{t['covered_lines']}/{t['called_lines']}, branches {t['covered_branches']}/"
             f"{t['called_branches']}.", "",
             "| module | functions called | lines | branches | in called functions: "
             "lines, branches |", "|---|---|---|---|---|"]
    for m in summary["modules"]:
        lines.append(f"| `{m['module']}` | {m['called']}/{m['functions']} | "
                     f"{m['covered_lines']}/{m['lines']} "
                     f"({pct(m['covered_lines'], m['lines'])}) | {m['covered_branches']}/"
                     f"{m['branches']} ({pct(m['covered_branches'], m['branches'])}) | "
                     f"{pct(m['covered_lines'], m['called_lines'])}, "
                     f"{pct(m['covered_branches'], m['called_branches'])} |")
    for m in summary["modules"]:
        if not m["partial"] and not m["never_called"]:
            continue
        lines += ["", f"### `{m['module']}`: never reached", ""]
        for p in m["partial"][:top]:
            br = ", ".join(f"{a}->{b}" for a, b in p["missing_branches"][:6])
            lines.append(f"- `{p['function']}`: branches "
                         f"{p['covered_branches']}/{p['branches']}"
                         + (f", unreached arcs {br}" if br else "")
                         + (f", lines {compact(p['missing_lines'])}"
                            if p["missing_lines"] else ""))
        if len(m["partial"]) > top:
            lines.append(f"- ... {len(m['partial']) - top} more functions partly reached")
        if m["never_called"]:
            lines.append(f"- never called: {len(m['never_called'])} functions")
    return "\n".join(lines) + "\n"


def compact(nums: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3-5, 9``."""
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(f"{nums[i]}-{nums[j]}" if j > i else f"{nums[i]}")
        i = j + 1
    return ", ".join(out)
