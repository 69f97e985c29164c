"""The ``invariants`` check (DESIGN.md check 5): the engine's mapping, free lists and request
table after every step obey the allocator's rules, judged from what the engine exposes and the
Case alone (never from the oracle's allocator); a feature whose pool has rules of its own (the
per-request SWA ring) judges its Cases through the hook point ``check.invariants``.
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.oracles.invariants import pool_invariants
from swafuzz.oracles.paths import expected_requests
from swafuzz.oracles.sharing import expected_layout, sharing_invariants, uses_triggers


@check("invariants")
def check_invariants(case, obs, exp) -> list[Failure]:
    """Mapping sentinel, page 0 never allocated, unique mapped SWA slots, in-window positions
    mapped, evicted positions unmapped, no leaked or double-free pages, draft shares the mapping.

    Judged only from the engine's exposure (mapping, free lists, request table; without a request
    table, the rules that need none) and the Case (:func:`oracles.paths.expected_requests`), never
    the oracle's allocator; ``exp`` is unused. Cases with sharing triggers
    (:func:`oracles.sharing.uses_triggers`) use :func:`oracles.sharing.sharing_invariants` for
    token-dup / evicted / orphan; a pool with rules of its own (slot ``CheckPart.invariants``: the
    ring) replaces the paged rules. Proven by ``evict_keeps_mapping`` (spec §9.15, PR #38519 class),
    its only killer; ``verify_reject_keeps_swa`` and ``finish_frees_shared_prefix`` for sharing."""
    pc = case.pool
    want_all = expected_requests(case)
    layouts = expected_layout(case) if uses_triggers(case) else None
    fails = []
    for so in obs.steps:
        where = f"after step {so.step} ({case.steps[so.step].op})"
        judged = features.first("check", "invariants", case, so, where, want_all[so.step])
        if judged is not None:  # e.g. the ring: R4, R5 and the slot rules
            fails += judged
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
                            pc.swa_pages, pc.swa_held_pages)
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

