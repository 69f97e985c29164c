"""How the target ran each forward (DESIGN.md check 8, issue 10): ``contracts`` (store locations
int32, one per row, non-negative, < 2^31; no valid Case refused) and ``exec_path`` (graph or
eager, ForwardMode, rows, captures and replays as the harness counted them).
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.checks.base import GRAPH_EXECUTORS, Failure, fwd_name, pair_by_forward
from swafuzz.checks.registry import check
from swafuzz.oracles.paths import expected_graph_use, expected_paths

INT32_LIMIT = 2**31


@check("contracts")
def check_contracts(case, obs, exp) -> list[Failure]:
    """Every store call got int32 locations, one per row, none negative, all below 2^31; and the
    target never refused a valid Case with a contract error. Proven by: ``int64_store_locs``
    (spec §9.8) and ``negative_loc_wraps`` (spec §9.9). With a per-request SWA ring the
    resolver's ``-1`` (skipped) rows are allowed; the store must skip them before the kernel,
    whose contract refuses a negative row (class A11): proven by ``ring_unguarded_store``."""
    fails = []
    skips = features.parts("check")
    for o in obs.forwards:
        for s in o.stores:
            problems = []
            if s.loc_dtype != "int32":
                problems.append((f"locations are {s.loc_dtype} (must be int32)", "dtype"))
            if len(s.locs) != s.rows:
                problems.append((f"{len(s.locs)} locations for {s.rows} rows", "count"))
            # a feature's skipped rows (slot CheckPart.skipped_loc: a ring's -1, addendum §2.1, R1);
            # the store must skip them, which the kernel's own contract enforces (class A11)
            neg = [v for v in s.locs if v < 0 and not any(p.skipped_loc(case, v) for p in skips)]
            if neg:
                problems.append((f"{len(neg)} negative write locations (first {neg[0]})",
                                 "negative"))
            big = [v for v in s.locs if v >= INT32_LIMIT]
            if big:
                problems.append((f"{len(big)} ids >= 2^31", "outside"))
            if problems:
                msg, cls = problems[0]
                fails.append(Failure("contracts", f"{fwd_name(o)} layer {s.layer}: store "
                                     f"called with {msg}", cls, o.step, o.fwd))
                return fails
    if obs.error is not None and obs.error.get("type") == "ContractError":
        fails.append(Failure("contracts", f"step {obs.error['step']}: the target refused a valid "
                             f"Case: {obs.error['message']}", "refused", obs.error["step"]))
    return fails


@check("exec_path")
def check_exec_path(case, obs, exp) -> list[Failure]:
    """Every forward ran as :func:`oracles.paths.expected_paths` says (without the target): graph or
    eager, ForwardMode, real rows, rows each store received (bucket rows, DP MAX_LEN; spec §5.1,
    §5.4), and the harness-counted ``Observation.graph_use``: one replay per graph step, one capture
    per (runner, bucket). ``exp`` unused. Sole killer of ``graph_less`` and ``dp_never_pads``."""
    graphs = obs.executor in GRAPH_EXECUTORS
    paths = expected_paths(case, graphs)
    pairs, _, _ = pair_by_forward(obs.forwards, paths, obs.error)  # missing: write_targets'
    fails = []
    for o, p in pairs:
        where = f"step {p.step} fwd {p.fwd} ({p.op}, {obs.executor} executor)"
        bucket = f"bucket {p.bucket}" if p.bucket is not None else "no bucket"
        problems = []
        if o.exec != p.exec:
            problems.append((f"ran {o.exec}, the Case determines {p.exec} ({bucket}, "
                             f"{p.rows} rows)", "path"))
        if o.mode != p.mode:
            problems.append((f"ForwardMode {o.mode}, expected {p.mode}", "mode"))
        if o.n_real != p.n_real:
            problems.append((f"{o.n_real} real rows, expected {p.n_real}", "count"))
        if o.rows != p.rows:
            problems.append((f"forward ran {o.rows} rows, expected {p.rows} ({p.n_real} real + "
                             f"{p.pad_rows} padded; {bucket}"
                             + (f", padded to {p.pad_to} across ranks" if p.pad_to else "")
                             + ")",
                             "rows"))
        bad = [st for st in o.stores if st.rows != p.rows]
        if bad:
            problems.append((f"layer {bad[0].layer} store got {bad[0].rows} rows, expected "
                             f"{p.rows}" + (f" (padded to {p.pad_to} across ranks)"
                                            if p.pad_to else ""), "rows"))
        if problems:
            msg, cls = problems[0]
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            fails.append(Failure("exec_path", f"{where}: {msg}{more}", cls, p.step, p.fwd))
            return fails
    if obs.graph_use is not None and obs.error is None:
        replays, captures = expected_graph_use(paths)
        for use in features.hooks("oracle.graph_use"):  # issue 12: window DECODE and
            fr, fc = use(case, graphs)                  # prefill graphs, the tail graph block
            replays, captures = replays + fr, captures + fc
        gu = obs.graph_use
        if gu.get("replays") != replays or gu.get("captures") != captures:
            first = next((p for p in paths if p.exec == "graph"), None)
            fails.append(Failure(
                "exec_path", f"the {obs.executor} executor counted {gu.get('captures')} captures "
                f"and {gu.get('replays')} replays; the Case determines {captures} captures and "
                f"{replays} replays" + (f" (first graph forward: step {first.step}, bucket "
                                         f"{first.bucket})" if first else ""), "graph-use",
                first.step if first else None))
    return fails
