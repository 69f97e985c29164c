"""The ``invariants`` check (DESIGN.md check 5): the engine's mapping, free lists and request
table after every step obey the allocator's rules, judged from what the engine exposes and the
Case alone (never from the oracle's allocator); with a per-request SWA ring, the ring rules
(:func:`features.ring.oracle.ring_invariants`).
"""

from __future__ import annotations

from swafuzz.features.ring.oracle import ring_invariants
from swafuzz.harness.check_base import Failure
from swafuzz.harness.check_registry import check
from swafuzz.oracles.invariants import pool_invariants
from swafuzz.oracles.paths import expected_requests
from swafuzz.oracles.sharing import expected_layout, sharing_invariants, uses_triggers


@check("invariants")
def check_invariants(case, obs, exp) -> list[Failure]:
    """Mapping sentinel, page 0 never allocated, unique mapped SWA slots, in-window positions
    mapped, evicted positions unmapped, no leaked or double-free pages, draft shares the mapping.

    Judged only from what the engine exposes (its mapping, free lists and request table) and the
    Case (which requests are live after each step, with how many tokens and which eviction
    frontier: :func:`oracles.paths.expected_requests`, arithmetic without page choices); never
    from the oracle's allocator. ``exp`` is unused. A target that exposes no request table
    (``StepObs.requests is None``) gets the rules that need none.
    Cases with prefix sharing or rejected-draft frees (:func:`oracles.sharing.uses_triggers`)
    swap the token-dup / evicted / orphan rules for their sharing-aware versions
    (:func:`oracles.sharing.sharing_invariants`: shared prefixes, held pages, reserved slots).
    Proven by: ``evict_keeps_mapping`` (spec §9.15, PR #38519 class), its only killer;
    ``verify_reject_keeps_swa`` and ``finish_frees_shared_prefix`` for the sharing rules.
    With a per-request SWA ring (``pool.swa_ring > 0``) the paged rules give way to the ring
    rules (R4 mapping never written, R5 accounting, request slots; :func:`_ring_invariants`)."""
    pc = case.pool
    want_all = expected_requests(case)
    layouts = expected_layout(case) if uses_triggers(case) else None
    fails = []
    for so in obs.steps:
        where = f"after step {so.step} ({case.steps[so.step].op})"
        if pc.swa_ring:  # per-request SWA ring: R4, R5 and the slot rules (features.ring.oracle)
            fails += _ring_invariants(case, so, where, want_all[so.step])
            if fails:
                return fails
            continue
        if not so.draft_mapping_is_target:
            fails.append(Failure("invariants", f"{where}: the draft pool does not share the "
                                 "allocator's mapping tensor (spec §2.1)", "mapping", so.step))
        reqs = so.requests
        if reqs is not None:
            want = want_all[so.step]
            got = {r: (len(t), ev) for r, (t, ev) in reqs.items()}
            if got != want:
                bad = sorted(set(got) ^ set(want)) or sorted(
                    r for r in want if got.get(r) != want[r])
                r = bad[0]
                fails.append(Failure(
                    "invariants", f"{where}: request table differs from the Case at "
                    f"{len(bad)} requests; first request {r}: (tokens, SWA frontier) expected "
                    f"{want.get(r, 'not live')} got {got.get(r, 'not live')}", "request",
                    so.step))
                return fails
        v = pool_invariants(so.mapping, so.free_full_pages, so.free_swa_pages,
                            reqs if reqs is not None else {}, pc.page_size, pc.full_pages,
                            pc.swa_pages)
        if reqs is None:  # rules over live requests cannot be judged
            v = [m for m in v if m.split(":")[0] not in (
                "orphan", "accounting", "free-in-use", "in-window", "evicted")]
        elif layouts is not None:  # prefix sharing / reserved verify slots: sharing-aware rules
            v = [m for m in v if m.split(":")[0] not in ("token-dup", "evicted", "orphan")] + \
                sharing_invariants(so.mapping, reqs, layouts[so.step], pc.page_size)
        if v:
            fails.append(Failure("invariants", f"{where}: {len(v)} violations; first: {v[0]}",
                                 "mapping", so.step))
            return fails
        if fails:
            return fails
    return fails


def _ring_invariants(case, so, where: str, live) -> list[Failure]:
    """The ring rules of :func:`features.ring.oracle.ring_invariants` over what the engine exposes
    (mapping, free lists, ``StepObs.ring``) and the Case's live requests. Proven by
    ``ring_accounting_drift`` (sglang #38571) and ``ring_slot_zero`` (R1)."""
    v = ring_invariants(case, so.ring, so.mapping, so.free_full_pages, so.free_swa_pages,
                        live)
    if so.requests is not None:
        got = {r: (len(t), ev) for r, (t, ev) in so.requests.items()}
        if got != live:
            v.insert(0, f"request: request table {got} differs from the Case {live}")
    if not v:
        return []
    cls = v[0].split(":")[0]
    return [Failure("invariants", f"{where}: {len(v)} ring violations; first: {v[0]}",
                    "ring-" + cls.lower(), so.step)]
