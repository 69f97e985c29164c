"""Per finding group of ``swafuzz report`` (:mod:`swafuzz.harness.report.read`), as plain data: the
picture of its SWA pools (:func:`pool_picture`: the oracle's expected side from the group's
Case, the observed side from the bundle), its reliability over reruns in an isolated worker
(:func:`measure_reliability`) and its status against the known-failure ledger
(:func:`ledger_status`).
"""

from __future__ import annotations

import json
from typing import Any

from swafuzz.features.validation import load_case
from swafuzz.harness.ledger.entries import classify
from swafuzz.harness.pipeline.execute import InvalidCase, resolve_executors
from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.oracles.engine import CaseInfeasible, expect
from swafuzz.reports import dedup
from swafuzz.scenarios.case import CaseError

PICTURE_SLOTS = 4096  # slots drawn per layer at most


def pool_picture(case_json: dict[str, Any], observed: list[dict[str, Any]] | None
                 ) -> tuple[dict[str, Any] | None, str]:
    """Plain-data picture of the SWA pools for ``reports.html.render_picture``; or (None, why)."""
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


def measure_reliability(groups: list[dedup.FindingGroup], n: int, default_target: str) -> None:
    """Replay each group's smallest Case ``n`` times in an isolated worker (a crash is a
    result, not the end of the report); sets ``g.reliability = (k, n)``."""
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


def ledger_status(groups: list[dedup.FindingGroup], rows: list[dict[str, Any]],
                  bundles: list[tuple[str, dict[str, Any]]], entries: list, target: str,
                  versions: dict[str, Any], release: str | None,
                  executor: str | None = None) -> dict[str, dict[str, Any]]:
    """``{signature: {"entries": [(id, cite)], "cases": n, "outside": k, "bundles": {path:
    [id]}}}`` for every group: ``n`` failing Cases considered (every bundle's and every failing
    log row's of that signature, deduplicated), ``k`` of them matched by no ledger entry
    (signature and ``when``); the group is known by the ledger iff ``n > 0`` and ``k == 0``;
    ``bundles``: the entry that knows each bundle's Case (none: [])."""
    by_sig: dict[str, list[dict[str, Any]]] = {g.signature: [] for g in groups}
    seen: set[tuple[str, str]] = set()

    def rec(sig: str, case: Any, tgt: str | None, vers: Any, ex: Any, exs: Any = None) -> dict:
        return {"signature": sig, "target": tgt or target, "case": case,
                "versions": vers if isinstance(vers, dict) else versions,
                "executor": ex if isinstance(ex, str) else executor,
                **({"executors": exs} if isinstance(exs, list) else {})}

    def add(sig: str, case: Any, *more: Any) -> None:
        key = (sig, json.dumps(case, sort_keys=True))
        if sig in by_sig and key not in seen:
            seen.add(key)
            by_sig[sig].append(rec(sig, case, *more))

    per_bundle: dict[str, dict[str, list[str]]] = {g.signature: {} for g in groups}
    for path, b in bundles:
        sig = str(b.get("signature"))
        r = rec(sig, b.get("case"), b.get("target"), b.get("versions"), b.get("executor"),
                b.get("executors"))
        if sig in per_bundle:
            per_bundle[sig][path] = [e.id for _, e in classify([r], entries, target,
                                                               release).known]
        add(sig, b.get("case"), b.get("target"), b.get("versions"), b.get("executor"),
            b.get("executors"))
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
        out[sig] = {"entries": ids, "cases": len(fs), "outside": len(c.new),
                    "bundles": per_bundle[sig]}
    return out
