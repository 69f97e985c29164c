"""The checks across the observations of one Case (DESIGN.md checks 6-7): ``agreement``
(eager, tape and cudagraph agree with each other, no oracle needed) and ``capture_freeze``
(every graph observation equals the recapture reference: nothing frozen at capture).
"""

from __future__ import annotations

from swafuzz.checks.base import (
    GRAPH_EXECUTORS,
    RECAPTURE_EXECUTOR,
    Failure,
    fwd_name,
    slot_class,
)
from swafuzz.checks.registry import check
from swafuzz.checks.write import first_pool_diff


@check(
    "agreement", across=True,
    defence="provably implied by write_targets + pool_bytes (each executor is compared "
            "with the oracle on the same real-row locations and pool bytes); it is the "
            "check that needs no oracle at all")
def check_agreement(case, observations: list) -> list[Failure] | None:
    """Eager, tape and cudagraph observations agree with each other: real-row write targets and
    pool bytes outside the dummy page after every step. (Each is also compared with the oracle
    by the other checks, so this is defence in depth: reason in its ``@check``.) Fires on
    ``host_baked_translation`` (PR #38137 class). The recapture reference is left out; None
    (nothing to judge) when fewer than two observations remain."""
    observations = [o for o in observations if o.executor != RECAPTURE_EXECUTOR]
    if len(observations) < 2:
        return None
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    base = observations[0]
    for other in observations[1:]:
        first = first_pool_diff(base, other, rb, p)
        if first:
            step, pool, layer, diff = first
            fails.append(Failure(
                "agreement", f"after step {step}: {pool} layer {layer}: "
                f"{base.executor} and {other.executor} differ at {len(diff)} slots; "
                f"first slot {diff[0]}", "live", step))
            return fails
        fa = {(f.step, f.fwd): f for f in base.forwards}
        for fb in other.forwards:
            f = fa.get((fb.step, fb.fwd))
            if f is None:
                continue
            for sa, sb in zip(f.stores, fb.stores):
                n = min(f.n_real, fb.n_real)
                if sa.locs[:n] != sb.locs[:n]:
                    r = next(i for i in range(n) if sa.locs[i] != sb.locs[i])
                    fails.append(Failure(
                        "agreement", f"{fwd_name(fb)} layer {sb.layer}: real row {r} resolved to "
                        f"{sa.locs[r]} under {base.executor} but {sb.locs[r]} under "
                        f"{other.executor}", slot_class(sa.locs[r], sb.locs[r], p), fb.step, fb.fwd))
                    return fails
    return fails


@check(
    "capture_freeze", across=True,
    defence="attributes a graph-only divergence to a value frozen at capture (graph vs "
            "the same forward recaptured on its live inputs); a frozen value that "
            "changes a write is always also a write_targets / pool_bytes / agreement "
            "finding, and one that changes nothing cannot be seen")
def check_capture_freeze(case, observations: list) -> list[Failure] | None:
    """No value is frozen at capture: every graph observation (tape, cudagraph) equals the
    *recapture reference* - the same Case on the same graph runners, where the harness's
    executor (:class:`harness.executors.tape.RecaptureTapeExecutor`) captures each forward
    again on its live inputs right before replaying it - in every graph forward's resolved
    locations (the translation) and in every pool byte after every step (the effect of every
    other captured buffer: payload rows, the static loc buffer, seq_lens, metadata). A
    divergence can only come from something computed when the graph was first captured and
    reused since. Nothing the target reports about its capture is read (``ForwardObs.baked``
    is ignored). ``harness.pipeline.execute.execute`` runs the reference only when a graph observation
    disagrees with the eager one (else there is nothing graph-only to attribute).

    Defence in depth (reason in its ``@check``): a frozen value that changes a write is also a
    write_targets / pool_bytes / agreement finding; this check names the cause. Fires on
    ``host_baked_translation`` (PR #38137 class) and the other graph-only mutants. None (nothing
    to judge) without a reference."""
    ref = next((o for o in observations if o.executor == RECAPTURE_EXECUTOR), None)
    if ref is None:
        return None
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    for obs in observations:
        if obs.executor not in GRAPH_EXECUTORS or obs.executor == RECAPTURE_EXECUTOR:
            continue
        rf = {(f.step, f.fwd): f for f in ref.forwards}
        for o in obs.forwards:
            r = rf.get((o.step, o.fwd))
            if o.exec != "graph" or r is None:
                continue
            for so, sr in zip(o.stores, r.stores):
                if so.locs != sr.locs:
                    row = next((i for i, (a, b) in enumerate(zip(so.locs, sr.locs)) if a != b),
                               min(len(so.locs), len(sr.locs)))
                    n_bad = sum(1 for a, b in zip(so.locs, sr.locs) if a != b)
                    fails.append(Failure(
                        "capture_freeze", f"[{obs.executor}] {fwd_name(o)} layer {so.layer}: "
                        f"the captured graph resolved {n_bad} of {len(so.locs)} rows differently "
                        f"from a graph recaptured on the live inputs; first row {row} "
                        f"({'real' if row < o.n_real else 'padded'}): replayed "
                        f"{so.locs[row] if row < len(so.locs) else None}, recaptured "
                        f"{sr.locs[row] if row < len(sr.locs) else None} (a translation frozen "
                        f"at capture)", "stale", o.step, o.fwd))
                    return fails
        first = first_pool_diff(obs, ref, rb, p)
        if first:
            step, pool, layer, diff = first
            fails.append(Failure(
                "capture_freeze", f"[{obs.executor}] after step {step}: {pool} "
                f"layer {layer}: {len(diff)} slots differ from the run whose graphs "
                f"were recaptured on the live inputs; first slot {diff[0]} (a value "
                f"frozen at capture: static buffer, payload or metadata)", "stale", step))
            return fails
    return fails
