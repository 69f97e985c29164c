"""The ``window`` check (addendum §5 W1-W8, E1-E2): the target's window-path channel
(:mod:`features.request_window.channel`) against the window oracle's, on request-window pools.
Per forward and layer outside the late layers: int32 workspace rows ``G * W + i`` (W1), one per
K row (W2), inside the workspace; the workspace bytes after each commit byte-exactly (history
rows from the right ring rows or the zero row, W5's validity; written rows); after every step
every layer's tags and ring bytes (commit mask and rows, W4; IDLE commits nothing, W6; replayed
rows committed after their slot's reset, E1-E2); a layout that overflows the workspace refused
at its step (A7); no window forward the Case does not determine. The late layers' tail:
:mod:`features.request_window.late_tail.checks`."""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.features.request_window import lane as wl
from swafuzz.features.request_window.channel import expected, observed


@check("window")
def check_window(case, obs, exp) -> list[Failure]:
    """See the module docstring. Proven by: ``window_before_idle`` (A2) and
    ``workspace_overflow_unchecked`` (A7), this check alone."""
    w = wl.lane(obs, exp) if expected(exp) is not None else None
    if w is None:
        if observed(obs).forwards:
            return [Failure("window", "the target ran window-path forwards for a Case without a "
                            "request window or tail", "count")]
        return []
    fails = []
    if w.refused is not None:
        step, why = w.refused
        if obs.error is None or obs.error.get("step") != step:
            got = ("ran it" if obs.error is None or obs.error["step"] > step else
                   f"stopped earlier at step {obs.error['step']}")
            fails.append(Failure("window", f"step {step}: the Case determines a refusal ({why}); "
                                 f"the target {got}", "refusal", step))
    pairs, more = wl.window_pairs(obs, exp, "window")
    fails += more
    rb = case.pool.row_bytes
    for o, e in pairs:
        if e.paged:
            continue
        for layer, s in enumerate(o.stores):
            if layer in e.tail_layers:
                continue
            want = e.locs[layer] if layer < len(e.locs) else []
            problem = None
            if s.loc_dtype != "int32":
                problem = (f"locations are {s.loc_dtype}, expected int32", "dtype")
            elif len(s.locs) != s.rows:
                problem = (f"{len(s.locs)} locations for {s.rows} K rows (W2)", "count")
            elif s.locs != want:
                bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
                r = bad[0] if bad else min(len(s.locs), len(want))
                problem = (f"{len(bad) + abs(len(s.locs) - len(want))} of {len(want)} rows "
                           f"differ; first row {r}: expected workspace row "
                           f"{want[r] if r < len(want) else '-'}, got "
                           f"{s.locs[r] if r < len(s.locs) else '-'} (W1: groups * W + i)",
                           "workspace")
            elif any(v >= w.workspace_rows or v < 0 for v in s.locs):
                problem = (f"a location outside the workspace of {w.workspace_rows} rows",
                           "outside")
            if wl.failed(fails, "window", f"{wl.fwd_label(o)} layer {layer}", problem, o.step,
                         o.fwd):
                break
        if e.workspace is not None:
            for layer, (a, b) in enumerate(zip(o.workspace, e.workspace)):
                if a != b:
                    r, n = wl.first_row_diff(a, b, rb)
                    hist = case.pool.window * (len(e.runs) if e.mode != "IDLE" else 1)
                    what = "history row" if r < hist else "written row"
                    wl.failed(fails, "window", f"{wl.fwd_label(o)} layer {layer}", (
                        f"workspace bytes differ at {n} rows; first row {r} ({what}): expected "
                        f"{b[r * rb:(r + 1) * rb].hex()} got {a[r * rb:(r + 1) * rb].hex()}",
                        "workspace"), o.step, o.fwd)
                    break
    got_steps = {s.step: s for s in observed(obs).steps}
    for se in w.steps:
        so = got_steps.get(se.step)
        if so is None or se.tags is None:
            continue
        where = f"after step {se.step} ({case.steps[se.step].op})"
        for layer, (a, b) in enumerate(zip(so.tags or [], se.tags)):
            if a != b:
                bad = [q for q in range(min(len(a), len(b))) if a[q] != b[q]]
                q = bad[0] if bad else 0
                fails.append(Failure("window", f"{where}: layer {layer} tags differ at {len(bad)} "
                                     f"ring rows; first row {q}: expected {b[q]} got "
                                     f"{a[q] if q < len(a) else '-'} (W4 commit)", "tags",
                                     se.step))
                return fails
        cap = -(-case.pool.request_window // case.pool.page_size) * case.pool.page_size
        for layer, (a, b) in enumerate(zip(so.ring or [], se.ring)):
            # slot 0 (the padding slot, never read) is left out: several padded graph rows
            # commit to the same slot-0 ring row in an order the contract leaves open; its tags
            # are compared above
            a, b = a[cap * rb:], b[cap * rb:]
            if a != b:
                r, n = wl.first_row_diff(a, b, rb)
                k = r
                r += cap
                fails.append(Failure("window", f"{where}: layer {layer} ring bytes differ at {n} "
                                     f"rows; first row {r}: expected {b[k * rb:(k + 1) * rb].hex()}"
                                     f" got {a[k * rb:(k + 1) * rb].hex()}", "ring", se.step))
                return fails
    return fails
