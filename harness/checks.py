"""The eight checks of DESIGN.md, over an Observation (what the target did) and an Expectation
(what the oracle says). Each returns a list of :class:`Failure`; an empty list means it passed.

Every check is proven by a mutant it kills (``swafuzz zoo``); the mutant that proves each one is
named in its docstring. Messages name the step, forward, layer, row or slot, the expected and
actual values, and how many of how many differ.

Signatures ``(check, scenario kind, slot class)`` deduplicate findings; the slot class says what
the first divergent row/slot hit: ``dummy`` (page 0 instead of a live slot), ``live`` (another
live slot), ``negative``, ``outside`` (past the buffer), ``dtype``, ``count``, ``stale``, ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

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
)


@dataclass
class Failure:
    check: str
    message: str
    slot_class: str = "-"

    def signature(self, kind: str) -> str:
        return f"{self.check}/{kind}/{self.slot_class}"

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "message": self.message, "slot_class": self.slot_class}


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
                             f"oracle does not expect ({len(f.stores)} stores)", "count"))
    for e in exp.forwards:
        if obs.error is not None and e.step >= obs.error["step"]:
            break
        o = got.get((e.step, e.fwd))
        if o is None:
            fails.append(Failure("write_targets", f"step {e.step} fwd {e.fwd}: the target ran no "
                                 f"such forward ({e.mode}, expected {e.n_real} real rows)", "count"))
        else:
            pairs.append((o, e))
    return pairs, fails


# ----------------------------------------------------------------------------- 1
def check_write_targets(case, obs, exp) -> list[Failure]:
    """Resolved write locations equal the oracle's, int32, per layer and forward; padded rows
    resolve to 0. Proven by: ``draft_extend_zeros`` (PR #27091 review), ``idle_uses_cache``."""
    p = case.pool.page_size
    pairs, fails = _pair_forwards(obs, exp)
    for o, e in pairs:
        n_layers = case.pool.layers if e.pool == "target" else case.pool.draft_layers
        if len(o.stores) != n_layers:
            fails.append(Failure("write_targets", f"{_fwd_name(o)}: {len(o.stores)} stores, "
                                 f"expected one per layer ({n_layers})", "count"))
        for s in o.stores:
            if s.loc_dtype != "int32":
                fails.append(Failure("write_targets", f"{_fwd_name(o)} layer {s.layer}: resolved "
                                     f"locations are {s.loc_dtype}, expected int32", "dtype"))
                continue
            want = list(e.targets) + [0] * (len(s.locs) - e.n_real)
            if len(s.locs) < e.n_real:
                fails.append(Failure("write_targets", f"{_fwd_name(o)} layer {s.layer}: "
                                     f"{len(s.locs)} locations for {e.n_real} real rows", "count"))
                continue
            bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
            if bad:
                r = bad[0]
                role = "real" if r < e.n_real else "padded"
                fails.append(Failure(
                    "write_targets",
                    f"{_fwd_name(o)} layer {s.layer}: {len(bad)} of {len(want)} rows differ; "
                    f"first: row {r} ({role}, full loc "
                    f"{e.full_locs[r] if r < e.n_real else 0}) expected SWA slot {want[r]}, "
                    f"got {s.locs[r]}",
                    _slot_class(want[r], s.locs[r], p, case.pool.swa_slots)))
                break
    return fails


def _slot_diffs(a: bytes, b: bytes, rb: int, start: int) -> list[int]:
    n = min(len(a), len(b)) // rb
    return [i for i in range(start, n) if a[i * rb:(i + 1) * rb] != b[i * rb:(i + 1) * rb]]


# ----------------------------------------------------------------------------- 2
def check_pool_bytes(case, obs, exp) -> list[Failure]:
    """Every SWA slot outside the dummy page equals the shadow pool after every step, as raw
    bytes. Proven by: ``pad_rows_not_zeroed`` (PR #24743), ``draft_extend_zeros``."""
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
                                f"{len(se.pools[pool])}", "count")]
            for layer, (a, b) in enumerate(zip(so.pools[pool], se.pools[pool])):
                diff = _slot_diffs(a, bytes(b), rb, p)
                if diff:
                    s = diff[0]
                    fails.append(Failure(
                        "pool_bytes",
                        f"after step {so.step} ({case.steps[so.step].op}): {pool} layer {layer}: "
                        f"{len(diff)} of {len(b) // rb - p} slots differ; first slot {s}: expected "
                        f"{bytes(b[s * rb:(s + 1) * rb]).hex()} got {a[s * rb:(s + 1) * rb].hex()}",
                        "live"))
                    return fails
    return fails


# ----------------------------------------------------------------------------- 3
def check_write_set(case, obs, exp) -> list[Failure]:
    """Exactly the oracle's slots (plus the dummy page) may change in a step: every slot whose
    bytes changed must be a real row's expected target. Proven by: ``pad_rows_not_zeroed``."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    allowed: dict[tuple[int, str], set[int]] = {}
    for e in exp.forwards:
        allowed.setdefault((e.step, e.pool), set()).update(e.targets)
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
                        f"changed); first slot {s}", "live"))
                    return fails
        prev = {k: list(v) for k, v in so.pools.items()}
    return fails


# ----------------------------------------------------------------------------- 4
def check_redzones(case, obs, exp) -> list[Failure]:
    """Canary bytes before and after every pool buffer stay intact (negative and out-of-range
    writes). Proven by: ``negative_loc_wraps`` (spec §9.9)."""
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
                            f"overwritten", "negative" if side == "before" else "outside"))
                        return fails
    return fails


# ----------------------------------------------------------------------------- 5
def check_invariants(case, obs, exp) -> list[Failure]:
    """Mapping sentinel, page 0 never allocated, unique mapped SWA slots, in-window positions
    mapped, evicted positions unmapped, draft shares the mapping, mapping equals the oracle's.
    Proven by: ``evict_keeps_mapping`` (spec §9.15, PR #38519 class)."""
    from swafuzz.oracles.invariants import pool_invariants

    pc = case.pool
    fails = []
    for so, se in zip(obs.steps, exp.steps):
        where = f"after step {so.step} ({case.steps[so.step].op})"
        if not so.draft_mapping_is_target:
            fails.append(Failure("invariants", f"{where}: the draft pool does not share the "
                                 "allocator's mapping tensor (spec §2.1)", "mapping"))
        v = pool_invariants(so.mapping, so.free_full_pages, so.free_swa_pages, se.requests,
                            pc.page_size, pc.full_pages, pc.swa_pages)
        if v:
            fails.append(Failure("invariants", f"{where}: {len(v)} violations; first: {v[0]}",
                                 "mapping"))
            return fails
        if so.mapping != se.mapping:
            bad = [i for i, (a, b) in enumerate(zip(so.mapping, se.mapping)) if a != b]
            i = bad[0] if bad else min(len(so.mapping), len(se.mapping))
            fails.append(Failure("invariants", f"{where}: mapping differs from the oracle's at "
                                 f"{len(bad)} full slots; first M[{i}]: expected "
                                 f"{se.mapping[i] if i < len(se.mapping) else None} got "
                                 f"{so.mapping[i] if i < len(so.mapping) else None}", "mapping"))
            return fails
    return fails


# ----------------------------------------------------------------------------- 6
def check_agreement(case, observations: list) -> list[Failure]:
    """Eager, tape and cudagraph observations agree with each other: real-row write targets and
    pool bytes outside the dummy page after every step. (Each is also compared with the oracle
    by the other checks.) Proven by: ``host_baked_translation`` (PR #38137 class)."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    fails = []
    base = observations[0]
    for other in observations[1:]:
        for sa, sb in zip(base.steps, other.steps):
            for pool in sa.pools:
                for layer, (a, b) in enumerate(zip(sa.pools[pool], sb.pools.get(pool, []))):
                    diff = _slot_diffs(a, b, rb, p)
                    if diff:
                        fails.append(Failure(
                            "agreement", f"after step {sa.step}: {pool} layer {layer}: "
                            f"{base.executor} and {other.executor} differ at {len(diff)} slots; "
                            f"first slot {diff[0]}", "live"))
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
                        f"{other.executor}", _slot_class(sa.locs[r], sb.locs[r], p)))
                    return fails
    return fails


# ----------------------------------------------------------------------------- 7
def check_capture_freeze(case, obs, exp) -> list[Failure]:
    """Host values baked at capture equal the live forward's: the captured bucket's rows, and any
    host-side translation a target baked into the graph. Proven by: ``host_baked_translation``."""
    pairs, _ = _pair_forwards(obs, exp)
    fails = []
    for o, e in pairs:
        if o.exec != "graph":
            continue
        rows = o.baked.get("rows")
        if rows is not None and e.rows_graph is not None and rows != [e.rows_graph]:
            fails.append(Failure("capture_freeze", f"{_fwd_name(o)}: captured bucket has "
                                 f"{rows} rows, the live forward needs {e.rows_graph}", "count"))
        baked = o.baked.get("swa_out_cache_loc")
        if baked is not None:
            want = list(e.targets) + [0] * (len(baked) - e.n_real)
            if baked != want:
                bad = [i for i, (a, b) in enumerate(zip(baked, want)) if a != b]
                r = bad[0] if bad else 0
                fails.append(Failure(
                    "capture_freeze", f"{_fwd_name(o)}: translation baked at capture is stale "
                    f"for {len(bad)} of {len(want)} rows; first row {r}: baked {baked[r]}, live "
                    f"{want[r]}", "stale"))
        if fails:
            return fails
    return fails


# ----------------------------------------------------------------------------- 8
def check_contracts(case, obs, exp) -> list[Failure]:
    """Every store call got int32 locations, one per row, none negative, all below 2^31; and the
    target never refused a valid Case with a contract error. Proven by: ``int64_store_locs``
    (spec §9.8) and ``negative_loc_wraps`` (spec §9.9)."""
    fails = []
    for o in obs.forwards:
        for s in o.stores:
            problems = []
            if s.loc_dtype != "int32":
                problems.append((f"locations are {s.loc_dtype} (must be int32)", "dtype"))
            if len(s.locs) != s.rows:
                problems.append((f"{len(s.locs)} locations for {s.rows} rows", "count"))
            neg = [v for v in s.locs if v < 0]
            if neg:
                problems.append((f"{len(neg)} negative write locations (first {neg[0]})",
                                 "negative"))
            big = [v for v in s.locs if v >= INT32_LIMIT]
            if big:
                problems.append((f"{len(big)} ids >= 2^31", "outside"))
            if problems:
                msg, cls = problems[0]
                fails.append(Failure("contracts", f"{_fwd_name(o)} layer {s.layer}: store "
                                     f"called with {msg}", cls))
                return fails
    if obs.error is not None and obs.error.get("type") == "ContractError":
        fails.append(Failure("contracts", f"step {obs.error['step']}: the target refused a valid "
                             f"Case: {obs.error['message']}", "refused"))
    return fails


PER_OBSERVATION: dict[str, Callable] = {
    "write_targets": check_write_targets,
    "pool_bytes": check_pool_bytes,
    "write_set": check_write_set,
    "redzones": check_redzones,
    "invariants": check_invariants,
    "capture_freeze": check_capture_freeze,
    "contracts": check_contracts,
}


def run_checks(case, observations: list, exp, only: set[str] | None = None) -> tuple[list[Failure], int]:
    """All checks over every observation, then agreement across them. Returns (failures, checks
    run). A target error other than a contract refusal is reported as check ``error``."""
    fails: list[Failure] = []
    n = 0
    for obs in observations:
        for name, fn in PER_OBSERVATION.items():
            if only and name not in only:
                continue
            n += 1
            for f in fn(case, obs, exp):
                f.message = f"[{obs.target}/{obs.impl}/{obs.executor}] {f.message}"
                fails.append(f)
        if obs.error is not None and obs.error.get("type") != "ContractError":
            fails.append(Failure("error", f"[{obs.executor}] step {obs.error['step']}: "
                                 f"{obs.error['type']}: {obs.error['message']}",
                                 obs.error["type"]))
    if len(observations) > 1 and (not only or "agreement" in only):
        n += 1
        fails += check_agreement(case, observations)
    return fails, n
