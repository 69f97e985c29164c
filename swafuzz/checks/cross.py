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
    pool bytes outside the dummy page after every step (defence in depth: reason in its
    ``@check``). Fires on ``host_baked_translation`` (PR #38137 class). The recapture reference
    is left out; None (nothing to judge) when fewer than two observations remain."""
    observations = [o for o in observations if o.executor != RECAPTURE_EXECUTOR]
    if len(observations) < 2:
        return None
    base = observations[0]
    for other in observations[1:]:
        fail = _pool_failure("agreement", base, other, case, "live", "after step {step}: {pool} "
                             f"layer {{layer}}: {base.executor} and {other.executor} differ at "
                             "{n} slots; first slot {first}")
        if fail:
            return [fail]
        fa = {(f.step, f.fwd): f for f in base.forwards}
        for fb in other.forwards:
            f = fa.get((fb.step, fb.fwd))
            if f is None:
                continue
            for sa, sb in zip(f.stores, fb.stores):
                n = min(f.n_real, fb.n_real)
                if sa.locs[:n] != sb.locs[:n]:
                    r = next(i for i in range(n) if sa.locs[i] != sb.locs[i])
                    return [Failure(
                        "agreement", f"{fwd_name(fb)} layer {sb.layer}: real row {r} resolved to "
                        f"{sa.locs[r]} under {base.executor} but {sb.locs[r]} under "
                        f"{other.executor}", slot_class(sa.locs[r], sb.locs[r],
                                                        case.pool.page_size), fb.step, fb.fwd)]
    return []


def _pool_failure(name: str, a, b, case, cls: str, msg: str) -> Failure | None:
    """The Failure for the first pool difference of observations ``a`` and ``b`` outside the
    dummy page (``msg`` formatted with step, pool, layer, n slots, first slot), or None."""
    first = first_pool_diff(a, b, case.pool.row_bytes, case.pool.page_size)
    if not first:
        return None
    step, pool, layer, diff = first
    return Failure(name, msg.format(step=step, pool=pool, layer=layer, n=len(diff),
                                    first=diff[0]), cls, step)


@check(
    "capture_freeze", across=True,
    defence="attributes a graph-only divergence to a value frozen at capture (graph vs "
            "the same forward recaptured on its live inputs); a frozen value that "
            "changes a write is always also a write_targets / pool_bytes / agreement "
            "finding, and one that changes nothing cannot be seen")
def check_capture_freeze(case, observations: list) -> list[Failure] | None:
    """No value is frozen at capture: every graph observation equals the *recapture reference*
    (:class:`harness.executors.tape.RecaptureTapeExecutor` captures each forward again on its live
    inputs before replaying) in every graph forward's resolved locations and every pool byte after
    every step; ``ForwardObs.baked`` is not read. The reference runs only when a graph observation
    disagrees with the eager one; None without it. Defence in depth; fires on
    ``host_baked_translation`` (PR #38137 class) and the other graph-only mutants."""
    ref = next((o for o in observations if o.executor == RECAPTURE_EXECUTOR), None)
    if ref is None:
        return None
    rf = {(f.step, f.fwd): f for f in ref.forwards}
    for obs in observations:
        if obs.executor not in GRAPH_EXECUTORS or obs.executor == RECAPTURE_EXECUTOR:
            continue
        for o in obs.forwards:
            r = rf.get((o.step, o.fwd))
            if o.exec != "graph" or r is None:
                continue
            for so, sr in zip(o.stores, r.stores):
                if so.locs != sr.locs:
                    row = next((i for i, (a, b) in enumerate(zip(so.locs, sr.locs)) if a != b),
                               min(len(so.locs), len(sr.locs)))
                    n_bad = sum(1 for a, b in zip(so.locs, sr.locs) if a != b)
                    return [Failure(
                        "capture_freeze", f"[{obs.executor}] {fwd_name(o)} layer {so.layer}: "
                        f"the captured graph resolved {n_bad} of {len(so.locs)} rows differently "
                        f"from a graph recaptured on the live inputs; first row {row} "
                        f"({'real' if row < o.n_real else 'padded'}): replayed "
                        f"{so.locs[row] if row < len(so.locs) else None}, recaptured "
                        f"{sr.locs[row] if row < len(sr.locs) else None} (a translation frozen "
                        f"at capture)", "stale", o.step, o.fwd)]
        fail = _pool_failure("capture_freeze", obs, ref, case, "stale",
                             f"[{obs.executor}] after step {{step}}: {{pool}} layer {{layer}}: "
                             "{n} slots differ from the run whose graphs were recaptured on the "
                             "live inputs; first slot {first} (a value frozen at capture: static "
                             "buffer, payload or metadata)")
        if fail:
            return [fail]
    return []
