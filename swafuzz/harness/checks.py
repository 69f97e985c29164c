"""The eight checks of DESIGN.md plus ``exec_path`` (issue 10), over an Observation (what the target did) and an Expectation
(what the oracle says). Each returns a list of :class:`Failure`; an empty list means it passed.

Every check is proven by a mutant it kills (``swafuzz zoo``); the mutant that proves each one is
named in its docstring. Leave-one-out rule (issue 10): each check is the only check that kills at
least one mutant, or is listed in :data:`DEFENCE_IN_DEPTH` with the reason it cannot be.
Expectations about *how* a forward runs come from the Case (``oracles.paths``), never from the
target's report about itself. Failures of one Case are returned earliest step / forward first.
Messages name the step, forward, layer, row or slot, the expected and actual values, and how
many of how many differ.

Signatures ``(check, scenario kind, slot class)`` deduplicate findings; the slot class says what
the first divergent row/slot hit: ``dummy`` (page 0 instead of a live slot), ``live`` (another
live slot), ``negative``, ``outside`` (past the buffer), ``dtype``, ``count``, ``stale``, ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from swafuzz.harness.attribution import _attribute, _ring_owner, _slot_owner

INT32_LIMIT = 2**31

CHECKS = (
    "write_targets",
    "pool_bytes",
    "write_set",
    "redzones",
    "invariants",
    "agreement",
    "capture_freeze",
    "contracts",
    "exec_path",
    "window",
    "tail",
    "window_graph",
    "compressor",
    "reprefill",
    "tail_graph",
    "history",
)

#: Checks that are defence in depth: no mutant is killed by them alone, by construction, and the
#: zoo gate accepts that for exactly these, printing the reason. Every other check must be the
#: only check that kills at least one mutant (``swafuzz zoo`` ablation).
DEFENCE_IN_DEPTH = {
    "write_set": "provably implied by pool_bytes: a slot changed at step k that no row targets "
                 "either differed from the shadow already at k-1, or now differs from the "
                 "shadow (which kept it) at k; write_set needs only the oracle's target sets, "
                 "not its bytes, so it stands when the byte model does not",
    "redzones": "the only check that sees writes outside the rows (before or after a buffer, "
                "or into a padded page's pad) when the store's address arithmetic (not the "
                "reported locations) is wrong; every such bug the zoo models today also "
                "reports a bad location (contracts, write_targets) or misses its own slot "
                "(pool_bytes: store_dense_page_stride leaves the real slot poisoned)",
    "agreement": "provably implied by write_targets + pool_bytes (each executor is compared "
                 "with the oracle on the same real-row locations and pool bytes); it is the "
                 "check that needs no oracle at all",
    "capture_freeze": "attributes a graph-only divergence to a value frozen at capture (graph vs "
                      "the same forward recaptured on its live inputs); a frozen value that "
                      "changes a write is always also a write_targets / pool_bytes / agreement "
                      "finding, and one that changes nothing cannot be seen",
    "tail": "names the late-layer tail's rows and count (addendum T1-T3); a wrong tail row "
            "always also changes bytes that pool_bytes (paged pool) or window (workspace, "
            "ring, tags) audit, a wrong tail length hits the store's own row/location "
            "contract (contracts), and under a window the tail's write_loc values do not "
            "depend on which rows are the tail",
    "reprefill": "names the cause of a late-layer prefix hit that skips the re-prefill (T5 / "
                 "A13): a hit longer than the cap always allocates fewer tokens than the Case "
                 "determines, which invariants (request table), pool_bytes / tail (paged "
                 "pool) or window (rows, workspace, ring) see too; reprefill says which hit "
                 "and why",
}


@dataclass
class Failure:
    check: str
    message: str
    slot_class: str = "-"
    step: int | None = None  # the step (and forward) where the divergence shows; findings of
    fwd: int | None = None  # one Case are ordered by them, earliest first

    def signature(self, kind: str) -> str:
        return f"{self.check}/{kind}/{self.slot_class}"

    def to_json(self) -> dict:
        d = {"check": self.check, "message": self.message, "slot_class": self.slot_class}
        if self.step is not None:
            d["step"] = self.step
        if self.fwd is not None:
            d["fwd"] = self.fwd
        return d

    def order_key(self) -> tuple:
        """Earliest step first, then forward (a step-level failure, fwd None, after the step's
        forwards: it is observed after them), then check order."""
        step = self.step if self.step is not None else 1 << 30
        fwd = self.fwd if self.fwd is not None else 1 << 30
        rank = CHECKS.index(self.check) if self.check in CHECKS else len(CHECKS)
        return (step, fwd, rank)


def _slot_class(expected: int | None, got: int, page_size: int, swa_slots: int | None = None) -> str:
    if got < 0:
        return "negative"
    if swa_slots is not None and got >= swa_slots:
        return "outside"
    if got < page_size:
        return "dummy"
    if expected is not None and expected < page_size:
        return "live-instead-of-dummy"
    return "live"


def _fwd_name(f: Any) -> str:
    return f"step {f.step} fwd {f.fwd} ({f.mode}, {f.exec}, {f.pool} pool)"


def _pair_forwards(obs, exp) -> tuple[list[tuple[Any, Any]], list[Failure]]:
    got = {(f.step, f.fwd): f for f in obs.forwards}
    pairs, fails = [], []
    known = {(e.step, e.fwd) for e in exp.forwards}
    for key in sorted(set(got) - known):
        f = got[key]
        fails.append(Failure("write_targets", f"{_fwd_name(f)}: the target ran a forward the "
                             f"oracle does not expect ({len(f.stores)} stores)", "count", f.step, f.fwd))
    for e in exp.forwards:
        if obs.error is not None and e.step >= obs.error["step"]:
            break
        o = got.get((e.step, e.fwd))
        if o is None:
            fails.append(Failure("write_targets", f"step {e.step} fwd {e.fwd}: the target ran no "
                                 f"such forward ({e.mode}, expected {e.n_real} real rows)", "count", e.step,
                                 e.fwd))
        else:
            pairs.append((o, e))
    return pairs, fails


# ----------------------------------------------------------------------------- 1
def check_write_targets(case, obs, exp) -> list[Failure]:
    """Resolved write locations equal the oracle's, int32, per layer and forward; padded rows
    resolve to 0 (or to the forward's ``pad_cycle``: a graph draft block, issue 12). Proven by: ``draft_extend_zeros`` (PR #27091 review), ``idle_uses_cache``;
    defence in depth beside pool_bytes (never the only killer; reason in DEFENCE_IN_DEPTH)."""
    p = case.pool.page_size
    pairs, fails = _pair_forwards(obs, exp)
    for o, e in pairs:
        n_layers = case.pool.layers if e.pool == "target" else case.pool.draft_layers
        if len(o.stores) != n_layers:
            fails.append(Failure("write_targets", f"{_fwd_name(o)}: {len(o.stores)} stores, "
                                 f"expected one per layer ({n_layers})", "count", o.step, o.fwd))
        for s in o.stores:
            if s.loc_dtype != "int32":
                fails.append(Failure("write_targets", f"{_fwd_name(o)} layer {s.layer}: resolved "
                                     f"locations are {s.loc_dtype}, expected int32", "dtype",
                                     o.step, o.fwd))
                continue
            cyc = getattr(e, "pad_cycle", ()) or (0,)  # issue 12: draft_block padding
            want = list(e.targets) + [cyc[k % len(cyc)] for k in range(len(s.locs) - e.n_real)]
            if len(s.locs) < e.n_real:
                fails.append(Failure("write_targets", f"{_fwd_name(o)} layer {s.layer}: "
                                     f"{len(s.locs)} locations for {e.n_real} real rows", "count",
                                     o.step, o.fwd))
                continue
            bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
            if bad:
                r = bad[0]
                role = "real" if r < e.n_real else "padded"
                owner = (_ring_owner(case, s.locs[r]) if case.pool.swa_ring
                         else _slot_owner(exp, e.step, s.locs[r], p))
                fails.append(Failure(
                    "write_targets",
                    f"{_fwd_name(o)} layer {s.layer}: {len(bad)} of {len(want)} rows differ; "
                    f"first: row {r} ({role}, full loc "
                    f"{e.full_locs[r] if r < e.n_real else 0}) expected SWA slot {want[r]}, "
                    f"got {s.locs[r]} ({owner})",
                    _slot_class(want[r], s.locs[r], p, case.pool.swa_slots), o.step, o.fwd))
                break
    return fails


def _first_pool_diff(x, y, rb: int, start: int):
    """The first (step, pool, layer, differing slots) where two observations' pool bytes
    differ outside the dummy page, or None."""
    for sa, sb in zip(x.steps, y.steps):
        for pool in sa.pools:
            for layer, (a, b) in enumerate(zip(sa.pools[pool], sb.pools.get(pool, []))):
                diff = _slot_diffs(a, b, rb, start)
                if diff:
                    return sa.step, pool, layer, diff
    return None


def _slot_diffs(a: bytes, b: bytes, rb: int, start: int) -> list[int]:
    n = min(len(a), len(b)) // rb
    if a[start * rb:n * rb] == b[start * rb:n * rb]:
        return []  # the common case, compared in C
    return [i for i in range(start, n) if a[i * rb:(i + 1) * rb] != b[i * rb:(i + 1) * rb]]


# ----------------------------------------------------------------------------- 2
def check_pool_bytes(case, obs, exp) -> list[Failure]:
    """Every SWA slot outside the dummy page equals the shadow pool after every step, as raw
    bytes; a mismatch names whose bytes appeared (poison, or the step / forward / layer / row,
    request and position of the payload row). Only killer of ``rows_misaligned`` (spec §9.13)."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    if obs.error is None and len(obs.steps) != len(exp.steps):
        return [Failure("pool_bytes", f"the target reported {len(obs.steps)} steps of "
                        f"{len(exp.steps)}", "count")]
    for so, se in zip(obs.steps, exp.steps):
        for pool in ("target", "draft"):
            if len(so.pools.get(pool, [])) != len(se.pools[pool]):
                return [Failure("pool_bytes", f"after step {so.step}: {pool} pool has "
                                f"{len(so.pools.get(pool, []))} layers, expected "
                                f"{len(se.pools[pool])}", "count", so.step)]
            for layer, (a, b) in enumerate(zip(so.pools[pool], se.pools[pool])):
                diff = _slot_diffs(a, bytes(b), rb, p)
                if diff:
                    s = diff[0]
                    want, got = bytes(b[s * rb:(s + 1) * rb]), a[s * rb:(s + 1) * rb]
                    where = ""
                    if case.pool.layout == "dsv4":
                        from swafuzz.oracles.dsv4_quant import first_token_difference

                        where = f" (DSV4 token, first difference at {first_token_difference(want, got)})"
                    fails.append(Failure(
                        "pool_bytes",
                        f"after step {so.step} ({case.steps[so.step].op}): {pool} layer {layer}: "
                        f"{len(diff)} of {len(b) // rb - p} slots differ; first slot {s}{where}: expected "
                        f"{want.hex()} ({_attribute(case, exp, want)}) got {got.hex()} "
                        f"({_attribute(case, exp, got)})", "live", so.step))
                    return fails
    return fails


# ----------------------------------------------------------------------------- 3
def check_write_set(case, obs, exp) -> list[Failure]:
    """Exactly the oracle's slots (plus the dummy page) may change in a step: every slot whose
    bytes changed must be a real row's expected target. Fires on ``pad_rows_not_zeroed``;
    defence in depth, provably implied by pool_bytes (see DEFENCE_IN_DEPTH)."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    allowed: dict[tuple[int, str], set[int]] = {}
    for e in exp.forwards:
        allowed.setdefault((e.step, e.pool), set()).update(e.targets)
    for we in getattr(getattr(exp, "window", None), "forwards", ()):  # paged late-layer tail
        if we.paged:
            allowed.setdefault((we.step, "target"), set()).update(t for lc in we.locs for t in lc)
    prev: dict[str, list[bytes]] = {}
    fails = []
    for so in obs.steps:
        for pool, layers in so.pools.items():
            for layer, now in enumerate(layers):
                before = prev.get(pool, [None] * len(layers))[layer]
                if before is None:
                    before = bytes([0x5A]) * len(now)
                changed = _slot_diffs(before, now, rb, p)
                extra = [s for s in changed if s not in allowed.get((so.step, pool), set())]
                if extra:
                    s = extra[0]
                    fails.append(Failure(
                        "write_set",
                        f"step {so.step} ({case.steps[so.step].op}): {pool} layer {layer}: "
                        f"{len(extra)} slots written that no real row targets (of {len(changed)} "
                        f"changed); first slot {s}: {_attribute(case, exp, now[s * rb:(s + 1) * rb])}",
                        "live", so.step))
                    return fails
        prev = {k: list(v) for k, v in so.pools.items()}
    return fails


# ----------------------------------------------------------------------------- 4
def check_redzones(case, obs, exp) -> list[Failure]:
    """Canary bytes before and after every pool buffer, and in every page's pad of a pool with a
    padded page stride, stay intact (negative, out-of-range and wrong-stride writes). Fires on ``negative_loc_wraps`` (spec §9.9) on the Triton path; defence in depth
    for kernel address arithmetic (see DEFENCE_IN_DEPTH)."""
    fails = []
    for so in obs.steps:
        for pool, zones in so.redzones.items():
            for layer, z in enumerate(zones):
                for side, got in (("before", z.before), ("after", z.after)):
                    want = (z.canary * (len(got) // max(1, len(z.canary)) + 1))[: len(got)]
                    if got != want:
                        nbad = sum(1 for a, b in zip(got, want) if a != b)
                        fails.append(Failure(
                            "redzones", f"after step {so.step} ({case.steps[so.step].op}): {pool} "
                            f"layer {layer}: {nbad} of {len(got)} canary bytes {side} the buffer "
                            f"overwritten", "negative" if side == "before" else "outside",
                            so.step))
                        return fails
                pad = case.pool.pad_bytes_per_page
                if pad and z.pads:
                    want = (z.canary * (pad // max(1, len(z.canary)) + 1))[:pad]
                    bad = [k for k in range(len(z.pads) // pad)
                           if z.pads[k * pad:(k + 1) * pad] != want]
                    if bad:
                        fails.append(Failure(
                            "redzones", f"after step {so.step} ({case.steps[so.step].op}): {pool} "
                            f"layer {layer}: the pad canaries after {len(bad)} page(s) "
                            f"overwritten, first after page {bad[0]} (page stride "
                            f"{case.pool.page_stride_bytes} bytes = {case.pool.page_size} rows of "
                            f"{case.pool.row_bytes} + {pad} pad)", "page-pad", so.step))
                        return fails
    return fails


# ----------------------------------------------------------------------------- 5
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
    from swafuzz.oracles.invariants import pool_invariants
    from swafuzz.oracles.paths import expected_requests
    from swafuzz.oracles.sharing import expected_layout, sharing_invariants, uses_triggers

    pc = case.pool
    want_all = expected_requests(case)
    layouts = expected_layout(case) if uses_triggers(case) else None
    fails = []
    for so in obs.steps:
        where = f"after step {so.step} ({case.steps[so.step].op})"
        if pc.swa_ring:  # per-request SWA ring: R4, R5 and the slot rules (oracles.ring)
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
    """The ring rules of :func:`oracles.ring.ring_invariants` over what the engine exposes
    (mapping, free lists, ``StepObs.ring``) and the Case's live requests. Proven by
    ``ring_accounting_drift`` (sglang #38571) and ``ring_slot_zero`` (R1)."""
    from swafuzz.oracles.ring import ring_invariants

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


# ----------------------------------------------------------------------------- 6
def check_agreement(case, observations: list) -> list[Failure]:
    """Eager, tape and cudagraph observations agree with each other: real-row write targets and
    pool bytes outside the dummy page after every step. (Each is also compared with the oracle
    by the other checks, so this is defence in depth: see DEFENCE_IN_DEPTH.) Fires on
    ``host_baked_translation`` (PR #38137 class)."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    base = observations[0]
    for other in observations[1:]:
        first = _first_pool_diff(base, other, rb, p)
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
                        "agreement", f"{_fwd_name(fb)} layer {sb.layer}: real row {r} resolved to "
                        f"{sa.locs[r]} under {base.executor} but {sb.locs[r]} under "
                        f"{other.executor}", _slot_class(sa.locs[r], sb.locs[r], p), fb.step, fb.fwd))
                    return fails
    return fails


# ----------------------------------------------------------------------------- 7
RECAPTURE_EXECUTOR = "tape_recapture"


def check_capture_freeze(case, observations: list) -> list[Failure]:
    """No value is frozen at capture: every graph observation (tape, cudagraph) equals the
    *recapture reference* - the same Case on the same graph runners, where the harness's
    executor (:class:`harness.executors.tape.RecaptureTapeExecutor`) captures each forward
    again on its live inputs right before replaying it - in every graph forward's resolved
    locations (the translation) and in every pool byte after every step (the effect of every
    other captured buffer: payload rows, the static loc buffer, seq_lens, metadata). A
    divergence can only come from something computed when the graph was first captured and
    reused since. Nothing the target reports about its capture is read (``ForwardObs.baked``
    is ignored). ``harness.run.execute`` runs the reference only when a graph observation
    disagrees with the eager one (else there is nothing graph-only to attribute).

    Defence in depth (:data:`DEFENCE_IN_DEPTH`): a frozen value that changes a write is also a
    write_targets / pool_bytes / agreement finding; this check names the cause. Fires on
    ``host_baked_translation`` (PR #38137 class) and the other graph-only mutants."""
    ref = next((o for o in observations if o.executor == RECAPTURE_EXECUTOR), None)
    if ref is None:
        return []
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    for obs in observations:
        if obs.executor not in ("tape", "cudagraph"):
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
                        "capture_freeze", f"[{obs.executor}] {_fwd_name(o)} layer {so.layer}: "
                        f"the captured graph resolved {n_bad} of {len(so.locs)} rows differently "
                        f"from a graph recaptured on the live inputs; first row {row} "
                        f"({'real' if row < o.n_real else 'padded'}): replayed "
                        f"{so.locs[row] if row < len(so.locs) else None}, recaptured "
                        f"{sr.locs[row] if row < len(sr.locs) else None} (a translation frozen "
                        f"at capture)", "stale", o.step, o.fwd))
                    return fails
        first = _first_pool_diff(obs, ref, rb, p)
        if first:
            step, pool, layer, diff = first
            fails.append(Failure(
                "capture_freeze", f"[{obs.executor}] after step {step}: {pool} "
                f"layer {layer}: {len(diff)} slots differ from the run whose graphs "
                f"were recaptured on the live inputs; first slot {diff[0]} (a value "
                f"frozen at capture: static buffer, payload or metadata)", "stale", step))
            return fails
    return fails


# ----------------------------------------------------------------------------- 8
def check_contracts(case, obs, exp) -> list[Failure]:
    """Every store call got int32 locations, one per row, none negative, all below 2^31; and the
    target never refused a valid Case with a contract error. Proven by: ``int64_store_locs``
    (spec §9.8) and ``negative_loc_wraps`` (spec §9.9). With a per-request SWA ring the
    resolver's ``-1`` (skipped) rows are allowed; the store must skip them before the kernel,
    whose contract refuses a negative row (class A11): proven by ``ring_unguarded_store``."""
    fails = []
    for o in obs.forwards:
        for s in o.stores:
            problems = []
            if s.loc_dtype != "int32":
                problems.append((f"locations are {s.loc_dtype} (must be int32)", "dtype"))
            if len(s.locs) != s.rows:
                problems.append((f"{len(s.locs)} locations for {s.rows} rows", "count"))
            # a ring's skipped rows are -1 (addendum §2.1, R1); the store must skip them, which
            # the kernel's own contract enforces (a -1 reaching it is a refusal: class A11)
            neg = [v for v in s.locs if v < 0 and not (case.pool.swa_ring and v == -1)]
            if neg:
                problems.append((f"{len(neg)} negative write locations (first {neg[0]})",
                                 "negative"))
            big = [v for v in s.locs if v >= INT32_LIMIT]
            if big:
                problems.append((f"{len(big)} ids >= 2^31", "outside"))
            if problems:
                msg, cls = problems[0]
                fails.append(Failure("contracts", f"{_fwd_name(o)} layer {s.layer}: store "
                                     f"called with {msg}", cls, o.step, o.fwd))
                return fails
    if obs.error is not None and obs.error.get("type") == "ContractError":
        fails.append(Failure("contracts", f"step {obs.error['step']}: the target refused a valid "
                             f"Case: {obs.error['message']}", "refused", obs.error["step"]))
    return fails


# ----------------------------------------------------------------------------- 9
GRAPH_EXECUTORS = ("tape", "cudagraph", "tape_recapture")


def check_exec_path(case, obs, exp) -> list[Failure]:
    """Every forward ran the way the Case determines (:func:`oracles.paths.expected_paths`,
    computed without the target): graph or eager, ForwardMode, real rows, and the rows every
    layer's store received (bucket rows under a graph, the DP MAX_LEN count on the eager DP
    path, spec §5.1, §5.4); and the graph executor, counted by the harness (not reported by the
    target, ``Observation.graph_use``), saw one replay per graph step and one capture per
    (runner, bucket). ``exp`` is unused.
    Proven by: ``graph_less`` (spec §5.1: every graph step run eagerly) and ``dp_never_pads``
    (spec §5.4 (4)), each killed by this check alone."""
    from swafuzz.oracles.paths import expected_graph_use, expected_paths, expected_window_graph_use

    graphs = obs.executor in GRAPH_EXECUTORS
    paths = expected_paths(case, graphs)
    got = {(f.step, f.fwd): f for f in obs.forwards}
    fails = []
    for p in paths:
        if obs.error is not None and p.step >= obs.error["step"]:
            break
        o = got.get((p.step, p.fwd))
        if o is None:
            continue  # a missing forward is write_targets' finding
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
                             + (f", DP pads to {p.dp_padded}" if p.dp_padded else "") + ")",
                             "rows"))
        bad = [st for st in o.stores if st.rows != p.rows]
        if bad:
            problems.append((f"layer {bad[0].layer} store got {bad[0].rows} rows, expected "
                             f"{p.rows}" + (f" (DP pads to {p.dp_padded})" if p.dp_padded
                                            else ""), "rows"))
        if problems:
            msg, cls = problems[0]
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            fails.append(Failure("exec_path", f"{where}: {msg}{more}", cls, p.step, p.fwd))
            return fails
    if obs.graph_use is not None and obs.error is None:
        replays, captures = expected_graph_use(paths)
        wr, wc = expected_window_graph_use(case, graphs)  # issue 12: window DECODE graphs
        replays, captures = replays + wr, captures + wc
        from swafuzz.oracles.window_prefill import expected_prefill_graph_use

        pr, pc = expected_prefill_graph_use(case, graphs)  # issue 12: window prefill graphs
        replays, captures = replays + pr, captures + pc
        from swafuzz.oracles.tail_graph import expected_tail_graph_use

        tr, tc = expected_tail_graph_use(case, graphs)  # issue 12: prefill-graph tail block
        replays, captures = replays + tr, captures + tc
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


# ----------------------------------------------------------------------------- 10, 11
def check_window(case, obs, exp) -> list[Failure]:
    """Request window (issue 12, addendum §5 W1-W8, E1-E2): see
    :func:`harness.window_checks.check_window`."""
    from swafuzz.harness.window_checks import check_window as run

    return run(case, obs, exp)


def check_tail(case, obs, exp) -> list[Failure]:
    """Late-layer tail (issue 12, addendum §5 T1-T3): see
    :func:`harness.window_checks.check_tail`."""
    from swafuzz.harness.window_checks import check_tail as run

    return run(case, obs, exp)


def check_window_graph(case, obs, exp) -> list[Failure]:
    """DECODE graphs under a request window (issue 12, addendum §4, §5 W7): see
    :func:`harness.window_checks.check_window_graph`."""
    from swafuzz.harness.window_checks import check_window_graph as run

    return run(case, obs, exp)


def check_compressor(case, obs, exp) -> list[Failure]:
    """Compressor write locations of EXTEND forwards (issue 12, addendum §5 E1): see
    :func:`harness.tail_prefix_checks.check_compressor`."""
    from swafuzz.harness.tail_prefix_checks import check_compressor as run

    return run(case, obs, exp)


def check_reprefill(case, obs, exp) -> list[Failure]:
    """Prefix hits under a late-layer tail (issue 12, addendum §5 T5, §6 A13): see
    :func:`harness.tail_prefix_checks.check_reprefill`."""
    from swafuzz.harness.tail_prefix_checks import check_reprefill as run

    return run(case, obs, exp)


def check_tail_graph(case, obs, exp) -> list[Failure]:
    """The late-layer tail under graphs (issue 12, addendum §5 T1/T4, §6 A3): see
    :func:`harness.tail_graph_checks.check_tail_graph`."""
    from swafuzz.harness.tail_graph_checks import check_tail_graph as run

    return run(case, obs, exp)


def check_history(case, obs, exp) -> list[Failure]:
    """W5 at use under a request window (issue 12, addendum §5 W5): see
    :func:`harness.history_checks.check_history`."""
    from swafuzz.harness.history_checks import check_history as run

    return run(case, obs, exp)


PER_OBSERVATION: dict[str, Callable] = {
    "write_targets": check_write_targets,
    "pool_bytes": check_pool_bytes,
    "write_set": check_write_set,
    "redzones": check_redzones,
    "invariants": check_invariants,
    "contracts": check_contracts,
    "exec_path": check_exec_path,
    "window": check_window,
    "tail": check_tail,
    "window_graph": check_window_graph,
    "compressor": check_compressor,
    "reprefill": check_reprefill,
    "tail_graph": check_tail_graph,
    "history": check_history,
}


def run_checks(case, observations: list, exp, only: set[str] | None = None) -> tuple[list[Failure], int]:
    """All checks over every observation, then agreement across them, then capture_freeze
    against the recapture reference when one is present (it is a reference, not checked itself).
    Returns (failures, checks run), earliest step first. A target error other than a contract
    refusal is reported as check ``error``."""
    fails: list[Failure] = []
    n = 0
    checked = [o for o in observations if o.executor != RECAPTURE_EXECUTOR]
    for obs in checked:
        for name, fn in PER_OBSERVATION.items():
            if only and name not in only:
                continue
            n += 1
            for f in fn(case, obs, exp):
                f.message = f"[{obs.target}/{obs.impl}/{obs.executor}] {f.message}"
                fails.append(f)
        from swafuzz.harness.window_checks import expected_refusal

        if obs.error is not None and obs.error.get("type") != "ContractError" and \
                not expected_refusal(obs, exp):
            fails.append(Failure("error", f"[{obs.executor}] step {obs.error['step']}: "
                                 f"{obs.error['type']}: {obs.error['message']}",
                                 obs.error["type"], obs.error["step"]))
    if len(checked) > 1 and (not only or "agreement" in only):
        n += 1
        fails += check_agreement(case, checked)
    if len(checked) < len(observations) and (not only or "capture_freeze" in only):
        n += 1
        fails += check_capture_freeze(case, observations)
    fails.sort(key=Failure.order_key)  # earliest step and forward first (stable within)
    return fails, n
