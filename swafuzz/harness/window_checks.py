"""The ``window`` and ``tail`` checks (issue 12; addendum §5 W1-W8, T1-T3, E1-E2).

Both compare the target's window-path channel (``Observation.window_forwards`` /
``window_steps``, see :mod:`targets.window`) with the window oracle (``Expectation.window``,
:mod:`oracles.window`), which predicts everything from the Case alone.

``window`` (request-window pools): per forward and layer outside the late layers, the store
got int32 workspace rows ``G * W + i`` (W1), one per K row (W2), below the workspace size; per
layer the workspace bytes after the commit (history rows copied from the right ring rows or the
zero row: W5's validity, and the written rows) byte-exactly; after every step every layer's
tags and ring bytes (commit mask and commit rows, W4; IDLE commits nothing, W6; replayed rows
committed after their slot's reset, E1-E2); a forward whose layout exceeds the workspace is
refused at its step (A7), and no window forward runs that the Case does not determine (W3/W8
show as wrong rows or an error). ``tail`` (late layers of EXTEND forwards, paged or window):
the store got ``sum(tail lens)`` int32 locations, one per K row (T1), equal to ``M[loc]`` of
each request's last ``min(W, n)`` rows (paged) or the tail layout's workspace rows (window)
(T2, T3).
"""

from __future__ import annotations

from swafuzz.harness.checks import Failure


def _name(f) -> str:
    return f"step {f.step} fwd {f.fwd} ({f.mode}, window path)"


def expected_refusal(obs, exp) -> bool:
    """The target's error is the refusal the window oracle predicts (A7: layout > workspace)."""
    w = getattr(exp, "window", None)
    return (w is not None and w.refused is not None and obs.error is not None
            and obs.error.get("step") == w.refused[0] and obs.error.get("type") == "RuntimeError")


def lane(obs, exp):
    """The window expectation for this observation's executor: Cases with DECODE-graph window
    steps have an eager lane (``WindowExp.eager``) for executors that capture no graphs (the
    harness knows the executor; the target does not report it)."""
    from swafuzz.harness.checks import GRAPH_EXECUTORS

    w = exp.window
    if w is not None and w.eager is not None and obs.executor not in GRAPH_EXECUTORS:
        return w.eager
    return w


def _pairs(obs, exp, check: str):
    w = lane(obs, exp)
    got = {(f.step, f.fwd): f for f in obs.window_forwards}
    pairs, fails = [], []
    want = {(e.step, e.fwd) for e in w.forwards}
    for key in sorted(set(got) - want):
        fails.append(Failure(check, f"{_name(got[key])}: a window-path forward the Case does not "
                             "determine", "count", key[0], key[1]))
    for e in w.forwards:
        if obs.error is not None and e.step >= obs.error["step"]:
            break
        o = got.get((e.step, e.fwd))
        if o is None:
            fails.append(Failure(check, f"step {e.step} fwd {e.fwd}: the target ran no such "
                                 f"window-path forward ({e.mode})", "count", e.step, e.fwd))
        else:
            pairs.append((o, e))
    return pairs, fails


def _first_row_diff(a: bytes, b: bytes, rb: int) -> tuple[int, int]:
    n = min(len(a), len(b)) // rb
    bad = [r for r in range(n) if a[r * rb:(r + 1) * rb] != b[r * rb:(r + 1) * rb]]
    return (bad[0] if bad else -1), len(bad)


def check_window(case, obs, exp) -> list[Failure]:
    """See the module docstring. Proven by: ``window_before_idle`` (A2) and
    ``workspace_overflow_unchecked`` (A7), this check alone."""
    w = lane(obs, exp) if getattr(exp, "window", None) is not None else None
    if w is None:
        if obs.window_forwards:
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
    pairs, more = _pairs(obs, exp, "window")
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
            if problem:
                fails.append(Failure("window", f"{_name(o)} layer {layer}: {problem[0]}",
                                     problem[1], o.step, o.fwd))
                break
        if e.workspace is not None:
            for layer, (a, b) in enumerate(zip(o.workspace, e.workspace)):
                if a != b:
                    r, n = _first_row_diff(a, b, rb)
                    hist = case.pool.window * (len(e.runs) if e.mode != "IDLE" else 1)
                    what = "history row" if r < hist else "written row"
                    fails.append(Failure("window", f"{_name(o)} layer {layer}: workspace bytes "
                                         f"differ at {n} rows; first row {r} ({what}): expected "
                                         f"{b[r * rb:(r + 1) * rb].hex()} got "
                                         f"{a[r * rb:(r + 1) * rb].hex()}", "workspace",
                                         o.step, o.fwd))
                    break
    got_steps = {s.step: s for s in obs.window_steps}
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
                r, n = _first_row_diff(a, b, rb)
                k = r
                r += cap
                fails.append(Failure("window", f"{where}: layer {layer} ring bytes differ at {n} "
                                     f"rows; first row {r}: expected {b[k * rb:(k + 1) * rb].hex()}"
                                     f" got {a[k * rb:(k + 1) * rb].hex()}", "ring", se.step))
                return fails
    return fails


def check_window_graph(case, obs, exp) -> list[Failure]:
    """W7 and the decode bucket's shape (addendum §4, §5 W7): every DECODE-graph forward under a
    window (graph executors) ran in its bucket ``B`` (the Case's smallest bucket >= the batch)
    with a layout of size ``B * W + B`` (one group per row), and every replay of one bucket used
    the same layout object (the one its capture built; the target hands a token per object, the
    check only compares tokens of one bucket). A graph forward the Case does not determine, or
    a graph step run eagerly, is also reported. Prefill graphs under a window (EXTEND forwards,
    :mod:`oracles.window_prefill`) the same: bucket ``T`` (token bucket), layout size
    ``min(S + 1, T) * W + T``, one layout object per prefill bucket (keyed apart from the DECODE
    buckets). Proven by ``window_graph_layout_rebuilt`` and, for prefill graphs,
    ``prefill_graph_layout_rebound`` (this check alone)."""
    w = lane(obs, exp) if getattr(exp, "window", None) is not None else None
    if w is None:
        return []
    got = {(f.step, f.fwd): f for f in obs.window_forwards}
    seen: dict[tuple[bool, int], tuple[int, int]] = {}
    fails = []
    for e in w.forwards:
        if obs.error is not None and e.step >= obs.error["step"]:
            break
        o = got.get((e.step, e.fwd))
        if o is None:
            continue  # window's finding
        ob = getattr(o, "bucket", None)
        if ob != e.bucket:
            fails.append(Failure("window_graph", f"{_name(o)}: ran in bucket {ob}, the Case "
                                 f"determines {e.bucket} (None: eager)", "path", e.step, e.fwd))
            break
        if e.bucket is None:
            continue
        if o.layout_size != e.size:
            fails.append(Failure("window_graph", f"{_name(o)}: layout size {o.layout_size}, "
                                 f"expected {e.size} (bucket {e.bucket}: decode groups = rows, "
                                 f"prefill groups = min(S + 1, T); W7)",
                                 "size", e.step, e.fwd))
            break
        # a prefill graph (EXTEND, oracles.window_prefill) and a DECODE graph of the same
        # bucket size are different graphs
        first = seen.setdefault((e.mode == "EXTEND", e.bucket), (o.layout_id, e.step))
        if o.layout_id != first[0]:
            fails.append(Failure("window_graph", f"{_name(o)}: bucket {e.bucket} replayed with "
                                 f"another layout object than at step {first[1]} (W7: the "
                                 "persistent layout keeps its identity per graph key)",
                                 "identity", e.step, e.fwd))
            break
    return fails


def check_tail(case, obs, exp) -> list[Failure]:
    """T1-T3 on every late layer of an EXTEND forward (module docstring). Proven by:
    ``tail_loc_int64`` (this check alone) and ``tail_first_rows`` (T3)."""
    w = getattr(exp, "window", None)
    if w is None:
        return []
    pairs, fails = _pairs(obs, exp, "tail")
    fails = [f for f in fails if f.slot_class != "count"]  # window's finding
    for o, e in pairs:
        for layer in e.tail_layers:
            if layer >= len(o.stores):
                fails.append(Failure("tail", f"{_name(o)}: no store for late layer {layer}",
                                     "count", o.step, o.fwd))
                break
            s, want = o.stores[layer], e.locs[layer]
            # a prefill-graph tail's stores take the whole capacity block (oracles.tail_graph)
            total = getattr(e, "tail_capacity", 0) or sum(e.tail_lens)
            problem = None
            if s.loc_dtype != "int32":
                problem = (f"tail locations are {s.loc_dtype}, expected int32 (T2)", "dtype")
            elif len(s.locs) != total or s.rows != total:
                problem = (f"{len(s.locs)} tail locations and {s.rows} K rows, the tail has "
                           f"{total} rows (tail lens {e.tail_lens}) (T1)", "count")
            elif s.locs != want:
                bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
                kind = "SWA slot M[loc]" if e.paged else "workspace row"
                problem = (f"{len(bad)} of {total} tail rows differ; first tail row {bad[0]}: "
                           f"expected {kind} {want[bad[0]]}, got {s.locs[bad[0]]} (T2/T3: each "
                           f"request's last min(W, n) rows)", "tail")
            if problem:
                fails.append(Failure("tail", f"{_name(o)} late layer {layer}: {problem[0]}",
                                     problem[1], o.step, o.fwd))
                break
    return fails
