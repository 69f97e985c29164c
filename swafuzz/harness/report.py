"""``swafuzz report DIR``: ``summary.md``, ``junit.xml`` and ``summary.html`` for a run directory.

Reads what ``swafuzz run`` (or ``zoo``) left in DIR: ``run.json`` (the run's metadata, written at
the end of a run), ``cases.jsonl`` (one row per executed case), ``findings/*.json`` (bundles) and
``kill-matrix.md`` (zoo). Findings are grouped by signature (:mod:`swafuzz.reports.dedup`); each
group's smallest Case is re-run through the oracle (plain data, no target code) to draw the
expected SWA pool; the observed side is drawn from the bundle's ``observed`` record (written for
every failing verdict since the report exists; older bundles and crash findings have none).
``--reruns N`` replays each group's smallest Case N times in an isolated worker to measure its
reliability (k of N failed with the same signature). ``--baseline PREV_DIR`` splits findings
into new / known / fixed against a previous run directory.

The known-failure ledger (:mod:`swafuzz.harness.ledger`; ``--ledger FILE``, default the
repository's ``ledger/known_failures.json``; ``--no-ledger`` to skip it) is consulted too: a
finding group is *known by the ledger* when every failing Case of the group (its bundle's Case
and every failing ``cases.jsonl`` row's Case) matches an entry, signature AND ``when``
predicate; one Case outside every entry keeps the group new (a new bug under a known signature).
Ledger-known groups show as ``known (ledger: ID)`` in summary.md and as ``<skipped>`` test cases
in junit.xml (message ``known: ledger entry ID (CITE)``, plus a ``ledger_entry`` property), so
CI stays green on them; the CLI exits 1 only when some group is not known by the ledger.

This module turns bundles into plain data; the renderers in ``reports/`` only format it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from swafuzz import targets
from swafuzz.features.validation import load_case
from swafuzz.reports import dedup
from swafuzz.reports.bundle import atomic_write_text, versions

PICTURE_SLOTS = 4096  # slots drawn per layer at most
MD_LIMIT = 1024 * 1024 - 4096


class ReportInputError(ValueError):
    """DIR (or a file in it) cannot be read: the CLI exits 2 with this message."""


def git_commit() -> str | None:
    """The commit of the checkout swafuzz runs from, if it is a git checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        r = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    c = r.stdout.strip()
    try:
        d = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10)
        if d.returncode == 0 and d.stdout.strip():
            c += "+dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return c


def write_run_meta(out: str, meta: dict[str, Any]) -> str:
    """``OUT/run.json``: what ran (for ``report``): commit, versions, device, budget, timings."""
    path = os.path.join(out, "run.json")
    vers = versions()
    for name in str(meta.get("target", "")).replace(",", " ").split():
        vers.update(targets.versions(name))  # what a target drives (its ``versions`` hook)
    data = {"commit": git_commit(), "versions": vers, **meta}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


# --------------------------------------------------------------------------- inputs
def _read_json(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ReportInputError(f"{path}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ReportInputError(f"{path}: not valid JSON ({e})") from None


def read_log(path: str) -> list[dict[str, Any]]:
    """Rows of ``cases.jsonl``; a torn last line (a killed run) is skipped, any other bad line
    is an input error naming the line."""
    rows: list[dict[str, Any]] = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 1:  # the last line, torn by a kill
                continue
            raise ReportInputError(f"{path}: line {i} is not valid JSON") from None
        if not isinstance(row, dict):
            raise ReportInputError(f"{path}: line {i} is not a JSON object")
        if "event" in row:  # a unit summary row of the run pipeline, not a case
            continue
        rows.append(row)
    return rows


def read_bundles(d: str) -> list[tuple[str, dict[str, Any]]]:
    fdir = os.path.join(d, "findings")
    out = []
    if not os.path.isdir(fdir):
        return out
    for name in sorted(os.listdir(fdir)):
        if name.endswith(".json") and not name.startswith("."):
            b = _read_json(os.path.join(fdir, name))
            if not isinstance(b, dict) or "signature" not in b:
                raise ReportInputError(f"{os.path.join(fdir, name)}: field 'signature' is "
                                       "required (a bundle written by swafuzz)")
            out.append((os.path.join(fdir, name), b))
    return out


# --------------------------------------------------------------------------- pictures
def pool_picture(case_json: dict[str, Any], observed: list[dict[str, Any]] | None
                 ) -> tuple[dict[str, Any] | None, str]:
    """Plain-data picture of the SWA pools for ``reports.html.render_picture``; or (None, why)."""
    from swafuzz.oracles.engine import CaseInfeasible, expect
    from swafuzz.scenarios.case import CaseError

    try:
        case = load_case(case_json)
        exp = expect(case, pools_every_step=False)
    except (CaseError, CaseInfeasible) as e:
        return None, f"the Case does not run on the oracle ({e})"
    pc = case.pool
    p = pc.page_size
    n_layers = {"target": pc.layers, "draft": pc.draft_layers}
    expected: dict[str, set[int]] = {k: set() for k in n_layers}
    dummy: dict[str, bool] = {k: False for k in n_layers}
    for e in exp.forwards:
        expected[e.pool].update(e.targets)
        rows = e.rows_graph if e.exec == "graph" and e.rows_graph is not None else e.rows_eager
        if rows > e.n_real or any(t < p for t in e.targets):
            dummy[e.pool] = True
    slots = min(pc.swa_slots, PICTURE_SLOTS)
    notes = []
    if pc.swa_slots > slots:
        notes.append(f"the first {slots} of {pc.swa_slots} slots per layer are drawn")
    if not observed:
        notes.append("no observed side in this bundle (a crash, or a bundle written before "
                     "observations were recorded): the expected pool only")
    elif any(o.get("truncated") for o in observed):
        notes.append(f"observed slot lists were capped at {4096} entries")
    for o in observed or []:
        if o.get("error"):
            err = o["error"]
            notes.append(f"{o.get('executor')}: the target stopped at step {err.get('step')} "
                         f"({err.get('type')}); slots after it are not observed")
    pools: dict[str, list[dict[str, Any]]] = {}
    for pool, n in n_layers.items():
        if n == 0 or (not expected[pool] and not dummy[pool] and not _any_obs(observed, pool)):
            continue
        layers = []
        for li in range(n):
            obs_l = []
            for o in observed or []:
                lay = (o.get("pools") or {}).get(pool) or []
                if li < len(lay):
                    obs_l.append({"executor": o.get("executor"), **lay[li]})
            layers.append({"expected": sorted(s for s in expected[pool] if s < slots),
                           "dummy_expected": dummy[pool], "observed": obs_l})
        pools[pool] = layers
    return {"page_size": p, "swa_slots": slots, "pools": pools, "note": "; ".join(notes)}, ""


def _any_obs(observed, pool: str) -> bool:
    for o in observed or []:
        for lay in (o.get("pools") or {}).get(pool) or []:
            if lay.get("written") or lay.get("changed"):
                return True
    return False


# --------------------------------------------------------------------------- reruns
def measure_reliability(groups: list[dedup.FindingGroup], n: int, default_target: str) -> None:
    """Replay each group's smallest Case ``n`` times in an isolated worker (a crash is a
    result, not the end of the report); sets ``g.reliability = (k, n)``."""
    from swafuzz.harness.run import InvalidCase, resolve_executors
    from swafuzz.harness.worker import CaseWorker
    from swafuzz.scenarios.case import CaseError

    for g in groups:
        if g.case is None:
            continue
        b = g.bundle or {}
        target = b.get("target") or default_target
        try:
            case = load_case(g.case)
        except CaseError:
            continue
        w = CaseWorker(target, b.get("impl") or "auto",
                       resolve_executors(b.get("executor") or "auto"))
        k = 0
        try:
            for _ in range(n):
                try:
                    v = w.run(case)
                except InvalidCase:
                    break
                sig = v.signature()
                if v.failed and (sig == g.signature or g.signature.endswith(":" + sig)):
                    k += 1
        finally:
            w.close()
        g.reliability = (k, n)


# --------------------------------------------------------------------------- build
def ledger_status(groups: list[dedup.FindingGroup], rows: list[dict[str, Any]],
                  bundles: list[tuple[str, dict[str, Any]]], entries: list, target: str,
                  versions: dict[str, Any], release: str | None,
                  executor: str | None = None) -> dict[str, dict[str, Any]]:
    """``{signature: {"entries": [(id, cite)], "cases": n, "outside": k}}`` for every group:
    ``n`` failing Cases considered (every bundle's and every failing log row's of that
    signature, deduplicated),
    ``k`` of them matched by no ledger entry (signature and ``when``); the group is known by the
    ledger iff ``n > 0`` and ``k == 0``."""
    from swafuzz.harness.ledger import classify

    by_sig: dict[str, list[dict[str, Any]]] = {g.signature: [] for g in groups}
    seen: set[tuple[str, str]] = set()

    def add(sig: str, case: Any, tgt: str | None, vers: Any, ex: Any, exs: Any = None) -> None:
        key = (sig, json.dumps(case, sort_keys=True))
        if sig in by_sig and key not in seen:
            seen.add(key)
            by_sig[sig].append({"signature": sig, "target": tgt or target, "case": case,
                                "versions": vers if isinstance(vers, dict) else versions,
                                "executor": ex if isinstance(ex, str) else executor,
                                **({"executors": exs} if isinstance(exs, list) else {})})

    for _, b in bundles:
        add(str(b.get("signature")), b.get("case"), b.get("target"), b.get("versions"),
            b.get("executor"), b.get("executors"))
    for r in rows:
        if r.get("failed") and r.get("signature") and isinstance(r.get("case"), dict):
            add(r["signature"], r["case"], None, None, r.get("executor"))
    out = {}
    for sig, fs in by_sig.items():
        c = classify(fs, entries, target, release)
        ids: list[tuple[str, str]] = []
        for _, e in c.known:
            if (e.id, e.cite) not in ids:
                ids.append((e.id, e.cite))
        out[sig] = {"entries": ids, "cases": len(fs), "outside": len(c.new)}
    return out


def build(d: str, baseline: str | None = None, reruns: int = 0, ledger: str | None = None,
          release: str | None = None) -> dict[str, Any]:
    """Write DIR/summary.md, DIR/junit.xml, DIR/summary.html; return what was found.
    ``ledger``: a ledger file to classify findings with (None: no ledger); ``release``: the
    target version its entries are checked against (default: the run's recorded version)."""
    from swafuzz.harness.ledger import LedgerError, imprecise, load_ledger

    entries: list = []
    ledger_warnings: list[str] = []
    if ledger is not None:
        try:
            entries = load_ledger(ledger)
        except LedgerError as e:
            raise ReportInputError(f"--ledger: {e}") from None
        ledger_warnings = imprecise(entries)
    from swafuzz.reports.html import render as render_html
    from swafuzz.reports.junit import render as render_junit
    from swafuzz.reports.summary import report_markdown

    if baseline is not None and not os.path.isdir(baseline):
        raise ReportInputError(f"--baseline: {baseline!r} is not a directory")
    if not os.path.isdir(d):
        raise ReportInputError(f"DIR: {d!r} is not a directory written by 'swafuzz run'")
    if not os.access(d, os.W_OK | os.X_OK):
        raise ReportInputError(f"DIR: cannot write the reports into {d!r} (permission denied)")
    meta_path = os.path.join(d, "run.json")
    meta = _read_json(meta_path) if os.path.exists(meta_path) else {}
    if not isinstance(meta, dict):
        raise ReportInputError(f"{meta_path}: must be a JSON object")
    rows = read_log(os.path.join(d, "cases.jsonl"))
    bundles = read_bundles(d)
    if not rows and not bundles and not meta and not os.path.exists(
            os.path.join(d, "kill-matrix.md")):
        raise ReportInputError(f"DIR: {d!r} holds no run.json, cases.jsonl, findings/ or "
                               "kill-matrix.md: not a directory written by 'swafuzz run' or "
                               "'swafuzz zoo'")
    base_sigs = None
    if baseline is not None:
        base_sigs = [g.signature for g in dedup.group(read_log(os.path.join(baseline,
                                                                              "cases.jsonl")),
                                                      read_bundles(baseline))]
    groups = dedup.group(rows, bundles)
    if reruns > 0:
        measure_reliability(groups, reruns, meta.get("target") or "unified")
    status = dedup.classify([g.signature for g in groups], base_sigs)
    vers = meta.get("versions") or (bundles[0][1].get("versions") if bundles else None) or {}
    led = ledger_status(groups, rows, bundles, entries, meta.get("target") or "unified", vers,
                        release, meta.get("executor") if isinstance(meta.get("executor"), str)
                        else None)
    known_by_ledger = [s for s in sorted(led) if led[s]["cases"] and not led[s]["outside"]]
    for s in known_by_ledger:  # the ledger wins over a missing baseline
        if s in status["new"]:
            status["new"].remove(s)
            status["known"] = sorted(status["known"] + [s])
    st_of = {s: k for k, sigs in status.items() for s in sigs}

    kinds: dict[str, dict[str, int]] = {}
    for r in rows:
        k = kinds.setdefault(r.get("kind") or "?", {"cases": 0, "shrinking": 0, "failing": 0,
                                                    "checks": 0})
        k["cases"] += 1
        k["shrinking"] += 1 if r.get("phase") == "shrink" else 0
        k["failing"] += 1 if r.get("failed") else 0
        k["checks"] += int(r.get("checks") or 0)
    km_path = os.path.join(d, "kill-matrix.md")
    kill_md = open(km_path).read() if os.path.exists(km_path) else None

    info = {
        "commit": meta.get("commit") or "unknown (no run.json)",
        "versions": ", ".join(f"{k} {v}" for k, v in sorted(vers.items()) if k != "device")
        or "unknown",
        "device": vers.get("device", "unknown"),
        "target": meta.get("target", "?"),
        "budget": _budget_line(meta, rows),
        "ledger": (f"{ledger} ({len(entries)} entries, {len(ledger_warnings)} warnings); "
                   f"{len(known_by_ledger)} finding signatures known by it")
        if ledger is not None else "not consulted (--no-ledger)",
        "ledger_warnings": ledger_warnings,
    }
    findings = []
    for g in groups:
        b = g.bundle or {}
        # the bundle's Case carries its observed side; a log-only group draws the oracle alone
        pcase = b.get("case") if isinstance(b.get("case"), dict) else g.case
        pic, why = (pool_picture(pcase, b.get("observed") if pcase is b.get("case") else None)
                    if pcase else (None, "no Case recorded"))
        findings.append({
            "signature": g.signature, "status": st_of.get(g.signature, "new"),
            "message": g.message or b.get("message") or "", "count": g.count,
            "first_seen": g.first_seen, "last_seen": g.last_seen,
            "first_time": g.first_time, "last_time": g.last_time,
            "reliability": f"{g.reliability[0]}/{g.reliability[1]} reruns failed"
            if g.reliability else None,
            "shrunk": g.to_json()["shrunk"], "repro": b.get("command"),
            "target": b.get("target") or info["target"], "picture": pic, "why": why,
            "ledger": [{"id": i, "cite": c} for i, c in led[g.signature]["entries"]]
            if g.signature in known_by_ledger else [],
            "ledger_outside": (f"{led[g.signature]['outside']} of {led[g.signature]['cases']} "
                               "failing Cases match no ledger entry (signature and 'when')")
            if led[g.signature]["entries"] and g.signature not in known_by_ledger else None})
    # [kind, cases run, of which shrinking, failing, checks run]
    kind_rows = [[k, v["cases"], v["shrinking"], v["failing"], v["checks"]]
                 for k, v in sorted(kinds.items())]

    md = report_markdown(info, kind_rows, findings, status, kill_md, limit=MD_LIMIT)
    atomic_write_text(os.path.join(d, "summary.md"), md)
    atomic_write_text(os.path.join(d, "junit.xml"),
                      render_junit(kind_rows, findings, status, info))
    title = f"swafuzz report: {os.path.basename(os.path.abspath(d))}"
    meta_rows = [("commit", info["commit"]), ("versions", info["versions"]),
                 ("device", info["device"]), ("target", info["target"]),
                 ("budget used", info["budget"]),
                 ("findings", f"{len(status['new'])} new, {len(status['known'])} known, "
                              f"{len(status['fixed'])} fixed")]
    atomic_write_text(os.path.join(d, "summary.html"),
                      render_html(title, meta_rows, kind_rows, findings, kill_md))
    return {"findings": len(groups), "status": status, "ledger_known": known_by_ledger,
            "ledger_warnings": ledger_warnings,
            "ledger_entries": {s: [i for i, _ in led[s]["entries"]] for s in known_by_ledger},
            "paths": [os.path.join(d, n) for n in ("summary.md", "junit.xml", "summary.html")]}


def _budget_line(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    secs = sum(float(r.get("seconds") or 0) for r in rows)
    parts = [f"{len(rows)} cases logged" if rows else "no case log"]
    if isinstance(meta.get("budget"), dict):  # zoo
        bz = meta["budget"]
        parts.append(f"zoo budget {bz.get('name')}: {bz.get('examples')} cases x "
                     f"{bz.get('seeds')} seeds per mutant")
    if meta.get("examples") is not None:
        parts.append(f"--examples {meta['examples']}")
    if meta.get("seconds") is not None:
        parts.append(f"{meta['seconds']:.1f} s wall")
    else:
        parts.append(f"{secs:.1f} s in cases")
    if meta.get("forward_steps") is not None:
        parts.append(f"{meta['forward_steps']} forward steps checked")
    if meta.get("started"):
        parts.append("started " + time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                 time.gmtime(meta["started"])))
    return ", ".join(parts)
