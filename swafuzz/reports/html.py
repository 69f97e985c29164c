"""``summary.html``: one self-contained page (inline CSS and SVG, no script, nothing fetched); per
bundle of each finding a block (path, status, Case, repro line, failing checks, steps) with a
picture of the SWA pool, drawn from plain data (``harness.report.findings.pool_picture``):

``picture = {"page_size": P, "swa_slots": S, "note": str, "pools": {pool: [layer, ...]}}`` with
``layer = {"expected": [slots], "dummy_expected": bool, "observed": [obs, ...]}`` and
``obs = {"executor", "written", "changed", "differs", "redzones": {"before", "after"}}``.

Per layer: an *expected* strip (the oracle's write targets) and one *actual* strip per executor
coloured against it (as expected, missing, unexpected, wrong bytes), the dummy page shaded, a
redzone bar at each end (black when canaries were overwritten); a legend names every colour and
hovering a slot names its page.
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

from swafuzz.reports.details import repro_text
from swafuzz.reports.summary import bundle_status, seen_text, shrunk_text

CELL, GAP, PER_ROW = 10, 2, 64
LABEL_W = 30  # the slot-number column left of each strip
COLORS = {"untouched": "#eeeeee", "dummy": "#c8c8c8", "dummy_written": "#7f7f7f",
          "expected": "#2e9d4f", "ok": "#2e9d4f", "missing": "#f39c12", "stray": "#d62728",
          "wrong": "#8e44ad", "rz_ok": "#9fd4ae", "rz_bad": "#111111"}
QUIET = ("untouched", "dummy")
LEGEND = [  # one colour per meaning; 'expected' (the oracle strip's writes) is 'ok''s green
    ("ok", "written, as expected (expected strip: the oracle writes here)"),
    ("missing", "expected, not written"),
    ("stray", "written, not expected"),
    ("wrong", "bytes differ from the oracle"),
    ("dummy", "dummy page (page 0)"),
    ("dummy_written", "dummy page, written"),
    ("untouched", "not written"),
    ("rz_ok", "redzone bar (each end of the buffer), intact"),
    ("rz_bad", "redzone bar, overwritten / write outside the buffer"),
]

CSS = "svg rect{width:%dpx;height:%dpx}" % (CELL, CELL) + "".join(
    f"svg rect.{k}{{fill:{c}}}" for k, c in COLORS.items()) + """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;
color:#222;background:#fff;max-width:1200px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-top:1px solid #ccc;
padding-top:14px}h3{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
td.long{overflow-wrap:anywhere}
th{background:#f3f3f3}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f7f7f7;padding:8px;white-space:pre-wrap;word-break:break-all}
.legend span{display:inline-block;margin:2px 12px 2px 0;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;
border:1px solid #999}
.strip{margin:2px 0 6px}.lbl{font-size:12px;color:#444}.bad{color:#b00020;font-weight:600}
.ok{color:#2e7d32;font-weight:600}.note{font-size:12px;color:#555}
h3.bundle{font-size:15px;margin:18px 0 4px}.part{font-size:13px;margin:6px 0 2px}
ol{font-size:12px;margin:2px 0 6px}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _strip_svg(cells: list[tuple[str, str]], page_size: int, rz: tuple[bool, str, bool, str]
               ) -> str:
    """One strip: ``cells[i] = (colour key, tooltip)`` for slot i, pages separated by a gap,
    wrapped at :data:`PER_ROW` slots, each row labelled with its first slot's number, redzone
    bars at both ends. Each page (each row, for pages under 8 slots) is a group whose hover
    text names its pages and slots; a cell that is not quiet has its own hover text too (slot,
    page, what happened)."""
    n = len(cells)
    per_row = max(page_size, (PER_ROW // page_size) * page_size) if page_size <= PER_ROW else PER_ROW
    per_row = max(1, min(per_row, n))
    rows = max(1, -(-n // per_row))
    pages_per_row = max(1, per_row // max(1, page_size))
    page_gap = 4 if page_size > 1 else 0
    bar = 8
    left = LABEL_W + bar + 4
    width = left + per_row * (CELL + GAP) + pages_per_row * page_gap + 4 + bar
    height = rows * (CELL + GAP) + 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'role="img">']
    for r in range(rows):  # slot numbers: the first slot of each row
        out.append(f'<text x="{LABEL_W - 3}" y="{r * (CELL + GAP) + CELL - 1}" '
                   f'text-anchor="end" font-size="9" fill="#555">{r * per_row}</text>')
    bad_b, tip_b, bad_a, tip_a = rz
    out.append(f'<rect x="{LABEL_W}" y="0" style="width:{bar}px;height:{height - 2}px" fill="'
               f'{COLORS["rz_bad" if bad_b else "rz_ok"]}"><title>{_esc(tip_b)}</title></rect>')
    p = max(1, page_size)
    grp = p if p >= 8 else per_row  # small pages: one hover group per row keeps big pools small
    for first in range(0, n, grp):
        last = min(n, first + grp) - 1
        pages = f"page {first // p}" if last // p == first // p else \
            f"pages {first // p}-{last // p}"
        out.append(f"<g><title>{pages}: slots {first}-{last}</title>")
        for i in range(first, last + 1):
            key, tip = cells[i]
            r, c = divmod(i, per_row)
            x = left + c * (CELL + GAP) + (c // p) * page_gap
            y = r * (CELL + GAP)
            if key in QUIET:  # the common cells: the page's hover text, to keep big pools small
                out.append(f'<rect x="{x}" y="{y}" class="{key}"/>')
            else:
                out.append(f'<rect x="{x}" y="{y}" class="{key}"><title>{_esc(tip)}</title>'
                           "</rect>")
        out.append("</g>")
    out.append(f'<rect x="{width - bar}" y="0" style="width:{bar}px;height:{height - 2}px" fill="'
               f'{COLORS["rz_bad" if bad_a else "rz_ok"]}"><title>{_esc(tip_a)}</title></rect>')
    out.append("</svg>")
    return "".join(out)


def _expected_cells(layer: dict[str, Any], p: int, s: int) -> list[tuple[str, str]]:
    exp = set(layer["expected"])
    cells = []
    for i in range(s):
        if i < p:
            key = "dummy_written" if layer.get("dummy_expected") else "dummy"
        else:
            key = "expected" if i in exp else "untouched"
        cells.append((key, f"slot {i} (page {i // p}): {key.replace('_', ' ')}"))
    return cells


def _actual_cells(layer: dict[str, Any], o: dict[str, Any], p: int, s: int
                  ) -> tuple[list[tuple[str, str]], list[int]]:
    exp = set(layer["expected"])
    written = set(o.get("written") or []) | {x for x in o.get("changed") or [] if x >= p}
    dummy_written = bool({x for x in (o.get("written") or []) if 0 <= x < p}
                         | {x for x in (o.get("changed") or []) if x < p})
    differs = set(o.get("differs") or [])
    outside = sorted(x for x in o.get("written") or [] if x < 0 or x >= s)
    cells = []
    for i in range(s):
        if i < p:
            key = "dummy_written" if dummy_written else "dummy"
        elif i in differs and (i in exp) == (i in written):
            key = "wrong"
        elif i in exp and i in written:
            key = "ok"
        elif i in exp:
            key = "missing"
        elif i in written:
            key = "stray"
        else:
            key = "untouched"
        cells.append((key, f"slot {i} (page {i // p}): {key.replace('_', ' ')}"))
    return cells, outside


def render_picture(picture: dict[str, Any]) -> str:
    p, s = picture["page_size"], picture["swa_slots"]
    parts = []
    if picture.get("note"):
        parts.append(f'<p class="note">{_esc(picture["note"])}</p>')
    for pool, layers in picture["pools"].items():
        for li, layer in enumerate(layers):
            parts.append(f"<h3>{_esc(pool)} pool, layer {li}: {s} slots, page size {p}</h3>")
            parts.append('<div class="strip"><div class="lbl">expected (oracle)</div>'
                         + _strip_svg(_expected_cells(layer, p, s), p,
                                      (False, "redzone before: must stay intact", False,
                                       "redzone after: must stay intact")) + "</div>")
            for o in layer.get("observed") or []:
                cells, outside = _actual_cells(layer, o, p, s)
                rz = o.get("redzones") or {}
                neg = [x for x in outside if x < 0]
                big = [x for x in outside if x >= 0]
                bad_b = bool(rz.get("before")) or bool(neg)
                bad_a = bool(rz.get("after")) or bool(big)
                tip_b = (f"redzone before: {rz.get('before', 0)} canary bytes overwritten; "
                         f"negative locations: {neg[:8]}")
                tip_a = (f"redzone after: {rz.get('after', 0)} canary bytes overwritten; "
                         f"locations past the buffer: {big[:8]}")
                counts = Counter(k for k, _ in cells)
                bad = {k: counts[k] for k in ("missing", "stray", "wrong") if counts.get(k)}
                summary = ", ".join(f"{v} {k}" for k, v in bad.items()) or "slots as expected"
                if bad_b or bad_a:
                    summary += f"; redzones: before {rz.get('before', 0)} B, after " \
                               f"{rz.get('after', 0)} B, {len(outside)} locations outside"
                cls = "bad" if (bad or bad_b or bad_a) else "ok"
                parts.append(f'<div class="strip"><div class="lbl">actual '
                             f'({_esc(o.get("executor"))}): <span class="{cls}">'
                             f'{_esc(summary)}</span></div>'
                             + _strip_svg(cells, p, (bad_b, tip_b, bad_a, tip_a)) + "</div>")
    return "\n".join(parts)


def _picture_or_why(x: dict[str, Any]) -> str:
    if x.get("picture"):
        return render_picture(x["picture"])
    return f'<p class="note">No pool picture: {_esc(x.get("why") or "no Case")}</p>'


def _bundle_block(f: dict[str, Any], v: dict[str, Any]) -> str:
    """One bundle: path, status, Case, repro line, every failing check, steps, pool picture."""
    parts = [f'<h3 class="bundle" id="{_esc(v["path"])}"><code>{_esc(v["path"])}</code> '
             f'<span class="note">({_esc(bundle_status(f, v))})</span></h3>',
             _table([], [["Case", f"kind {v['kind']}, {shrunk_text(v['shrunk'])}"],
                         ["pool", v["pool"]], ["repro (from the run directory)", repro_text(v)]]),
             f"<p class=\"part\">failing checks ({v['failures_count']}):</p><ol>"
             + "".join(f"<li><code>{_esc(t)}</code></li>" for t in v["failures"]) + "</ol>"]
    if v["failures_left_out"]:
        parts.append(f'<p class="note">({v["failures_left_out"]} more in the bundle)</p>')
    more = f"\n({v['steps_left_out']} more steps in the bundle)" if v["steps_left_out"] else ""
    parts.append(f"<p class=\"part\">steps ({v['shrunk']['steps']}):</p><pre>"
                 + _esc("\n".join(v["steps"]) + more) + "</pre>")
    parts.append(_picture_or_why(v))
    return "\n".join(parts)


def _legend() -> str:
    return ('<div class="legend">' + "".join(
        f'<span><i style="background:{COLORS[k]}"></i>{_esc(t)}</span>' for k, t in LEGEND)
        + "</div>")


def _md_table(md: str) -> str:
    """A Markdown table (as ``reports.summary.table`` writes it) as an HTML table; any other
    text as preformatted text."""
    lines = [ln.strip() for ln in md.strip().splitlines() if ln.strip()]
    if len(lines) < 2 or not all(ln.startswith("|") and ln.endswith("|") for ln in lines):
        return f"<pre>{_esc(md)}</pre>"
    cells = [[c.strip() for c in ln[1:-1].split("|")] for ln in lines]
    rows = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    if "repro" in cells[0]:  # each finding below carries its repro command
        i = cells[0].index("repro")
        cells[0] = cells[0][:i] + cells[0][i + 1:]
        rows = [r[:i] + r[i + 1:] for r in rows]
    return _table(cells[0], rows)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    h = "".join(f"<th>{_esc(x)}</th>" for x in headers)
    long_td = '<td class="long">'
    b = "".join("<tr>" + "".join(
        f"{long_td if len(str(c)) > 60 else '<td>'}{_esc(c)}</td>" for c in r)
        + "</tr>" for r in rows)
    return f"<table>{f'<tr>{h}</tr>' if h else ''}{b}</table>"


def render(title: str, meta: list[tuple[str, Any]], kinds: list[list[Any]],
           findings: list[dict[str, Any]], kill_matrix_md: str | None = None) -> str:
    """The whole page. ``findings[i]``: ``signature, status, message, count, first_seen,
    last_seen, reliability, shrunk, repro, picture`` (picture may be None, with ``why``)."""
    body = [f"<h1>{_esc(title)}</h1>", _table([], [[k, v] for k, v in meta])]
    if kinds:
        body.append("<h2>Cases per scenario kind</h2>")
        body.append(_table(["scenario kind", "cases run", "of which shrinking", "failing",
                            "checks run"], kinds))
    if kill_matrix_md:
        body.append("<h2>Kill matrix</h2>" + _md_table(kill_matrix_md))
    body.append(f"<h2>Findings ({len(findings)})</h2>")
    if not findings:
        body.append('<p class="ok">No findings.</p>')
    else:
        body.append(_legend())
    for f in findings:
        body.append(f'<h2 id="{_esc(f["signature"])}">{_esc(f["signature"])} '
                    f'<span class="note">({_esc(f.get("status", "new"))})</span></h2>')
        body.append(_table(["failing cases logged", "first / last (case #)", "reliability",
                            "bundles", "smallest Case logged"], [[
            f.get("count") if f.get("first_seen") is not None else "-", seen_text(f),
            f.get("reliability") or "not measured",
            sum(1 for v in f.get("bundles") or [] if v.get("repro")),
            shrunk_text(f.get("shrunk"))]]))
        if not f.get("bundles"):
            if f.get("message"):
                body.append(f"<pre>{_esc(f['message'])}</pre>")
            body.append(_picture_or_why(f))
        for v in f.get("bundles") or []:
            body.append(_bundle_block(f, v))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
