"""Plain-text / Markdown tables: the campaign's closing table and the zoo's kill matrix; a
server-level run's per-kind rows (:func:`server_kinds`) and ``summary.md``."""

from __future__ import annotations

import json
from typing import Any, Sequence

from swafuzz.reports.details import repro_text


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> str:
    """A plain or Markdown table; a missing value (None) shows as '-'."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in r]
                                           for r in rows]
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
    """``stats[kind] = {"cases", "checks", "findings", "seconds"}`` -> closing table; with
    ``"generated"`` in every row, the cases are split into generated and shrinking."""
    split = bool(stats) and all("generated" in s for s in stats.values())
    tot = dict.fromkeys(["cases", "checks", "findings", "seconds"] + ["generated"] * split, 0)

    def row(name: str, s: dict[str, Any]) -> list[Any]:
        mid = [s["generated"], s["cases"] - s["generated"]] if split else []
        return [name, s["cases"], *mid, s["checks"], s["findings"], f"{s['seconds']:.1f}"]

    rows = []
    for kind in sorted(stats):
        rows.append(row(kind, stats[kind]))
        for k in tot:
            tot[k] += stats[kind][k]
    rows.append(row("total", tot))
    head = ["cases run", "generated", "shrinking"] if split else ["cases"]
    return table(["scenario kind", *head, "checks run", "findings", "seconds"], rows, markdown)


def kill_matrix(result: dict[str, Any], markdown: bool = False) -> str:
    """``result`` as written by ``swafuzz zoo --json`` -> the kill matrix table."""
    rows = []
    c = result["control"]
    verdict = "not finished" if c["clean"] is None else "clean" if c["clean"] else "FAILED"
    rows.append([f"{c.get('target', 'unified')} (control)", verdict, c.get("cases", ""), "",
                 f"{c['seconds']:.1f}", c.get("check") or "", "", ""])
    for m in result["mutants"]:
        shr = m.get("shrunk") or {}
        size = f"{shr.get('requests', '?')}r/{shr.get('steps', '?')}s" if shr else ""
        verdict = "killed" if m["killed"] else (
            f"not reachable here: {m['unreachable']}" if m.get("unreachable") else "SURVIVED")
        rows.append([m["name"], verdict, m.get("cases_to_kill", ""), m.get("kills", ""),
                     f"{m['seconds']:.1f}", m.get("check") or "", size, m.get("repro") or ""])
    return table(["mutant", "verdict", "cases to kill (median)", "seeds killed", "seconds",
                  "check", "shrunk", "repro"], rows, markdown)


def _cell(x: Any, n: int = 160) -> str:
    s = " ".join(str(x if x is not None else "-").split()).replace("|", "\\|")
    return s if len(s) <= n else s[: n - 1] + "…"


def shrunk_text(s: dict[str, Any] | None) -> str:
    return f"{s.get('requests', '?')} req / {s.get('steps', '?')} steps" if s else "-"


def seen_text(f: dict[str, Any]) -> str:
    """'first / last' case numbers of a finding group, '-' when only its bundle is known."""
    if f.get("first_seen") is None:
        return "- (bundle only)"
    return f"{f['first_seen']} / {f['last_seen']}"


def _entry_text(e: dict[str, Any]) -> str:
    """A ledger entry's id with its server-level answer when the ledger gives one."""
    return f"{e['id']}; {e['server']}" if e.get("server") else str(e["id"])


def status_text(f: dict[str, Any]) -> str:
    """'new', 'known', 'known (ledger: ID, ...)', or 'new (...)' when some failing Cases of a
    signature the ledger knows fall outside its entries' ``when`` predicates."""
    if f.get("ledger"):
        return "known (ledger: " + ", ".join(_entry_text(e) for e in f["ledger"]) + ")"
    if f.get("ledger_outside"):
        return f"{f.get('status')} ({_cell(f['ledger_outside'], 120)})"
    return str(f.get("status"))


def bundle_status(f: dict[str, Any], v: dict[str, Any]) -> str:
    """A bundle's status: the group's, with the ledger entry that knows this bundle's Case."""
    if f.get("ledger"):
        by_id = {e["id"]: e for e in f["ledger"]}
        ids = v.get("ledger") or list(by_id)
        return "known (ledger: " + ", ".join(
            _entry_text(by_id.get(i, {"id": i})) for i in ids) + ")"
    return status_text(f)


def _rows_and_details(f: dict[str, Any]) -> list[tuple[list[Any], list[str]]]:
    """One findings-table row per bundle of a finding (a log-only finding: one row, its smallest
    logged Case), each with its details block (every failing check, the Case's steps)."""
    sig = f"`{_cell(f['signature'])}`"
    common = [f.get("count"), seen_text(f), f.get("reliability") or "-"]
    if not f.get("bundles"):
        return [([status_text(f), sig, "-", *common,
                  shrunk_text(f.get("shrunk")) + (" (logged)" if f.get("shrunk") else ""),
                  _cell(f.get("message"), 200), "-"], [])]
    out = []
    for v in f["bundles"]:
        row = [bundle_status(f, v), sig, f"`{v['path']}`", *common, shrunk_text(v["shrunk"]),
               _cell(v.get("message") or f.get("message"), 200),
               f"`{v['repro']}`" if v.get("repro") else "- (no bundle)"]
        det = [f"### `{_cell(f['signature'])}`: `{v['path']}`", "",
               f"* status: {bundle_status(f, v)}",
               f"* Case: kind `{v['kind']}`, {shrunk_text(v['shrunk'])}; pool: {v['pool']}",
               f"* repro: `{v['repro']}`" if v.get("repro") else f"* repro: {repro_text(v)}",
               f"* failing checks ({v['failures_count']}):"]
        det += [f"  {i}. {_cell(t, 400)}" for i, t in enumerate(v["failures"], start=1)]
        if v["failures_left_out"]:
            det.append(f"  ({v['failures_left_out']} more in the bundle)")
        det += [f"* steps ({v['shrunk']['steps']}):", "", "```"] + v["steps"]
        if v["steps_left_out"]:
            det.append(f"({v['steps_left_out']} more steps in the bundle)")
        det += ["```", ""]
        out.append((row, det))
    return out


def report_markdown(info: dict[str, Any], kinds: Sequence[Sequence[Any]],
                    findings: Sequence[dict[str, Any]], status: dict[str, list[str]],
                    kill_matrix_md: str | None = None, limit: int = 1024 * 1024) -> str:
    """``summary.md`` of ``swafuzz report``: fit for a CI job summary (``$GITHUB_STEP_SUMMARY``)
    and never more than ``limit`` bytes (long cells are cut, then whole finding rows dropped
    with a note)."""
    head = [f"# swafuzz report ({info.get('target', '?')})", "",
            f"* commit: `{info.get('commit')}`", f"* versions: {info.get('versions')}",
            f"* device: {info.get('device')}", f"* budget used: {info.get('budget')}",
            f"* findings: **{len(status.get('new', []))} new**, "
            f"{len(status.get('known', []))} known, {len(status.get('fixed', []))} fixed"]
    if info.get("shrinking"):
        head.append(f"* shrinking: {_cell(info['shrinking'], 600)}")
    if info.get("ledger"):
        head.append(f"* known-failure ledger: {_cell(info['ledger'], 400)}")
    if info.get("repro_note"):
        head.append(f"* {info['repro_note']}")
    head.append("")
    if info.get("ledger_warnings"):
        head += ["## Ledger warnings", ""] + [f"* {_cell(w, 400)}"
                                               for w in info["ledger_warnings"]] + [""]
    if kinds:
        tot = [sum(int(r[i]) for r in kinds) for i in (1, 2, 3, 4)]
        head += ["## Cases per scenario kind", "",
                 table(["scenario kind", "cases run", "of which shrinking", "failing",
                        "checks run"],
                       [list(r) for r in kinds] + [["total", *tot]], markdown=True), ""]
    pairs = [p for f in findings for p in _rows_and_details(f)]
    rows = [r for r, _ in pairs]
    hdr = ["status", "signature", "bundle", "failing cases", "first / last case", "reliability",
           "Case (of the bundle)", "message", "repro"]
    tail = []
    if status.get("fixed"):
        tail += ["## Fixed since the baseline", ""] + [f"* `{s}`" for s in status["fixed"]] + [""]
    if kill_matrix_md:
        tail += ["## Kill matrix", "", kill_matrix_md.strip(), ""]
    kept = list(rows)
    while True:
        part = ["## Findings", ""]
        part += [table(hdr, kept, markdown=True)] if kept else ["No findings."]
        if len(kept) < len(rows):
            part += ["", f"({len(rows) - len(kept)} more findings left out to stay under "
                         f"{limit // 1024} KiB; see summary.html and findings/)"]
        details = [ln for _, det in pairs[:len(kept)] for ln in det]
        if details:
            part += ["", "## Bundles", "", "Every bundle (for a signature that was only logged, "
                     "its smallest logged Case): its Case, every failing check it recorded, the "
                     "Case's steps and its repro line.", ""] + details
        text = "\n".join(head + part + [""] + tail) + "\n"
        if len(text.encode()) <= limit or not kept:
            break
        over = len(text.encode()) - limit
        per = max(1, len(text.encode()) // max(1, len(kept) + 1))
        kept = kept[: max(0, len(kept) - max(1, over // per + 1))]
    if len(text.encode()) > limit:  # head and tail alone too big (a huge kill matrix)
        text = text.encode()[: limit - 100].decode("utf-8", "ignore") + "\n\n(cut)\n"
    return text


def server_kinds(kinds: list[str], rows: list[dict]) -> tuple[dict[str, dict], list[dict]]:
    """The unit rows of a server-level run per kind (``run.json``'s ``kinds``: cases run,
    seconds, Cases stopped out of scope, the finding, the release's refusal) and the unit rows
    with a finding (one per signature and kind), in the run's kind order (``kinds``)."""
    per_kind: dict[str, dict] = {}
    findings: dict[tuple[str, str], dict] = {}
    for r in sorted(rows, key=lambda r: (kinds.index(r["kind"]) if r["kind"] in kinds
                                         else len(kinds), r["unit"])):
        k = per_kind.setdefault(r["kind"], {"cases": 0, "seconds": 0.0,
                                            "stopped_out_of_scope": 0, "finding": None})
        k["cases"] += (r.get("generated") or 0) + (r.get("shrunk") or 0)
        k["seconds"] = round(k["seconds"] + (r.get("seconds") or 0.0), 2)
        k["stopped_out_of_scope"] += r.get("stopped_out_of_scope") or 0
        for eid, n in (r.get("known") or {}).items():
            k.setdefault("known", {})[eid] = k.get("known", {}).get(eid, 0) + n
        if r.get("refused"):
            k["refused"] = r["refused"]
        if r.get("finding"):
            k["finding"] = k["finding"] or r["finding"]
            findings.setdefault((r["finding"], r["kind"]), r)
    return per_kind, list(findings.values())


def server_finding_lines(rel: str, bundle: dict[str, Any]) -> list[str]:
    case = bundle.get("case") or {}
    reqs = case.get("requests") or []
    lines = [f"bundle {rel}: {len(reqs)} request(s), config "
             + json.dumps(case.get("config") or {}, sort_keys=True),
             f"  repro: swafuzz repro {rel}  (from the run directory)"]
    lines += [f"  {f.get('check')}: {f.get('message')}" for f in bundle.get("failures") or []]
    return lines



def server_markdown(run: dict[str, Any], bundles: dict[str, dict[str, Any]]) -> str:
    """``summary.md`` of a server-level run (``run.json`` and its new findings' bundles)."""
    head = (f"# swafuzz server-level run: {run.get('target')} "
            f"({', '.join(f'{k} {v}' for k, v in sorted((run.get('versions') or {}).items()))})"
            f"\n\n{run.get('cases')} cases in {run.get('seconds')} s, seed {run.get('seed')}, "
            f"executors {', '.join(run.get('executors') or [])}"
            + (f", server mutant {run['server_mutant']}" if run.get("server_mutant") else "")
            + f"; {len(bundles)} new finding(s), {len(run.get('known') or {})} known ledger "
            "entr(y/ies).\n\n| kind | cases | seconds | stopped out of scope "
            "| finding |\n|---|---:|---:|---:|---|\n")
    rows = "".join(f"| {k} | {v.get('cases')} | {v.get('seconds')} | "
                   f"{v.get('stopped_out_of_scope')} | {v.get('finding') or '-'} |\n"
                   for k, v in (run.get("kinds") or {}).items())
    body = "".join(f"\n## new: {b.get('signature')}\n\n```\n"
                   + "\n".join(server_finding_lines(rel, b)) + "\n```\n" for rel, b in bundles.items())
    known = run.get("known") or {}
    if known:
        body += ("\n## known (ledger entries; not failures of this run)\n\n| ledger entry | "
                 "signature | cases | bundle |\n|---|---|---:|---|\n" + "".join(
                     f"| {eid} | {k.get('signature')} | {k.get('cases')} | "
                     f"{k.get('bundle') or '-'} |\n" for eid, k in sorted(known.items())))
    if not bundles:
        body = ("\nNo new findings.\n" + body) if known else "\nNo findings.\n"
    return head + rows + body
