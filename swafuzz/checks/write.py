"""The write checks of the dense path (DESIGN.md checks 1-4): ``write_targets``, ``pool_bytes``,
``write_set`` and ``redzones``, over an Observation (what the target did) and an Expectation
(what the oracle says), plus the pairing and byte-diff helpers the cross-observation checks
share (:mod:`checks.cross`).

Every check is proven by a mutant it kills (``swafuzz zoo``), named in its docstring, or carries
its defence-in-depth reason in its ``@check`` (:mod:`checks.registry`).
"""

from __future__ import annotations

from typing import Any

from swafuzz import features
from swafuzz.checks.attribution import attribute, loc_owner
from swafuzz.checks.base import Failure, fwd_name, pair_by_forward, slot_class
from swafuzz.checks.registry import check
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.scenarios.paged import PagedBytes, poison_like, slot_diffs

_REDZONES_DEFENCE = (
    "the only check that sees writes outside the rows (before or after a buffer, or into a padded "
    "page's pad) when the store's address arithmetic (not the reported locations) is wrong; every "
    "such bug the zoo models today also reports a bad location (contracts, write_targets) or "
    "misses its own slot "
    "(pool_bytes: store_dense_page_stride leaves the real slot poisoned)")


def pair_forwards(obs, exp) -> tuple[list[tuple[Any, Any]], list[Failure]]:
    """The (observed, expected) forward pairs up to the target's error, and a
    ``write_targets`` failure for each forward only one side has."""
    pairs, extra, missing = pair_by_forward(obs.forwards, exp.forwards, obs.error)
    fails = [Failure("write_targets", f"{fwd_name(f)}: the target ran a forward the oracle does "
                     f"not expect ({len(f.stores)} stores)", "count", f.step, f.fwd)
             for f in extra]
    fails += [Failure("write_targets", f"step {e.step} fwd {e.fwd}: the target ran no such "
                      f"forward ({e.mode}, expected {e.n_real} real rows)", "count", e.step, e.fwd)
              for e in missing]
    return pairs, fails


@check("write_targets")
def check_write_targets(case, obs, exp) -> list[Failure]:
    """Resolved write locations equal the oracle's, int32, per layer and forward; padded rows
    resolve to 0 (or to the forward's ``pad_cycle``: a graph draft block, issue 12). Proven by: ``draft_extend_zeros`` (PR #27091 review), ``idle_uses_cache``;
    also the sole killer of ``ring_draft_block_pad_fill_0`` (a graph draft block's pad cycle)."""
    p = case.pool.page_size
    pairs, fails = pair_forwards(obs, exp)
    for o, e in pairs:
        n_layers = case.pool.layers if e.pool == "target" else case.pool.draft_layers
        if len(o.stores) != n_layers:
            fails.append(Failure("write_targets", f"{fwd_name(o)}: {len(o.stores)} stores, "
                                 f"expected one per layer ({n_layers})", "count", o.step, o.fwd))
        for s in o.stores:
            if s.loc_dtype != "int32":
                fails.append(Failure("write_targets", f"{fwd_name(o)} layer {s.layer}: resolved "
                                     f"locations are {s.loc_dtype}, expected int32", "dtype",
                                     o.step, o.fwd))
                continue
            cyc = getattr(e, "pad_cycle", ()) or (0,)  # issue 12: draft_block padding
            want = list(e.targets) + [cyc[k % len(cyc)] for k in range(len(s.locs) - e.n_real)]
            if len(s.locs) < e.n_real:
                fails.append(Failure("write_targets", f"{fwd_name(o)} layer {s.layer}: "
                                     f"{len(s.locs)} locations for {e.n_real} real rows", "count",
                                     o.step, o.fwd))
                continue
            bad = [r for r, (a, b) in enumerate(zip(s.locs, want)) if a != b]
            if bad:
                r = bad[0]
                role = "real" if r < e.n_real else "padded"
                owner = loc_owner(case, exp, e.step, s.locs[r])
                fails.append(Failure(
                    "write_targets",
                    f"{fwd_name(o)} layer {s.layer}: {len(bad)} of {len(want)} rows differ; "
                    f"first: row {r} ({role}, full loc "
                    f"{e.full_locs[r] if r < e.n_real else 0}) expected SWA slot {want[r]}, "
                    f"got {s.locs[r]} ({owner})",
                    slot_class(want[r], s.locs[r], p, case.pool.swa_slots), o.step, o.fwd))
                break
    return fails


def first_pool_diff(x, y, rb: int, start: int):
    """The first (step, pool, layer, differing slots) where two observations' pool bytes
    differ outside the dummy page, or None."""
    for sa, sb in zip(x.steps, y.steps):
        for pool in sa.pools:
            for layer, (a, b) in enumerate(zip(sa.pools[pool], sb.pools.get(pool, []))):
                diff = slot_diffs(a, b, rb, start)
                if diff:
                    return sa.step, pool, layer, diff
    return None


@check("pool_bytes")
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
                diff = slot_diffs(a, b if isinstance(a, PagedBytes) else bytes(b), rb, p)
                if diff:
                    s = diff[0]
                    want, got = bytes(b[s * rb:(s + 1) * rb]), a[s * rb:(s + 1) * rb]
                    where = "".join(p.slot_difference(case, want, got)  # the DSV4 token's 1st byte
                                    for p in features.parts("check"))
                    fails.append(Failure(
                        "pool_bytes",
                        f"after step {so.step} ({case.steps[so.step].op}): {pool} layer {layer}: "
                        f"{len(diff)} of {len(b) // rb - p} slots differ; first slot {s}{where}: expected "
                        f"{want.hex()} ({attribute(case, exp, want)}) got {got.hex()} "
                        f"({attribute(case, exp, got)})", "live", so.step))
                    return fails
    return fails


@check(
    "write_set",
    defence="provably implied by pool_bytes: a slot changed at step k that no row targets "
            "either differed from the shadow already at k-1, or now differs from the "
            "shadow (which kept it) at k; write_set needs only the oracle's target sets, "
            "not its bytes, so it stands when the byte model does not")
def check_write_set(case, obs, exp) -> list[Failure]:
    """Exactly the oracle's slots (plus the dummy page) may change in a step: every slot whose
    bytes changed must be a real row's expected target. Fires on ``pad_rows_not_zeroed``;
    defence in depth, provably implied by pool_bytes (reason in its ``@check``)."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    allowed: dict[tuple[int, str], set[int]] = {}
    for e in exp.forwards:
        allowed.setdefault((e.step, e.pool), set()).update(e.targets)
    for step, pool, slots in exp.pool_writes():  # the channels' (a paged late-layer tail)
        allowed.setdefault((step, pool), set()).update(slots)
    prev: dict[str, list[bytes]] = {}
    fails = []
    for so in obs.steps:
        for pool, layers in so.pools.items():
            for layer, now in enumerate(layers):
                before = prev.get(pool, [None] * len(layers))[layer]
                if before is None:
                    before = poison_like(now, POISON_BYTE)
                changed = slot_diffs(before, now, rb, p)
                extra = [s for s in changed if s not in allowed.get((so.step, pool), set())]
                if extra:
                    s = extra[0]
                    fails.append(Failure(
                        "write_set",
                        f"step {so.step} ({case.steps[so.step].op}): {pool} layer {layer}: "
                        f"{len(extra)} slots written that no real row targets (of {len(changed)} "
                        f"changed); first slot {s}: {attribute(case, exp, now[s * rb:(s + 1) * rb])}",
                        "live", so.step))
                    return fails
        prev = {k: list(v) for k, v in so.pools.items()}
    return fails


@check("redzones", defence=_REDZONES_DEFENCE)
def check_redzones(case, obs, exp) -> list[Failure]:
    """Canary bytes before and after every pool buffer, and in every page's pad of a pool with a
    padded page stride, stay intact (negative, out-of-range and wrong-stride writes). Fires on ``negative_loc_wraps`` (spec §9.9) on the Triton path; defence in depth
    for kernel address arithmetic (reason in its ``@check``)."""
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
                    bad = changed_pads(z.pads, pad, want)
                    if bad:
                        fails.append(Failure(
                            "redzones", f"after step {so.step} ({case.steps[so.step].op}): {pool} "
                            f"layer {layer}: the pad canaries after {len(bad)} page(s) "
                            f"overwritten, first after page {bad[0]} (page stride "
                            f"{case.pool.page_stride_bytes} bytes = {case.pool.page_size} rows of "
                            f"{case.pool.row_bytes} + {pad} pad)", "page-pad", so.step))
                        return fails
    return fails


def changed_pads(pads, pad: int, want: bytes) -> list[int]:
    """The pages whose pad (``pad`` bytes each, page order in ``pads``) is not ``want``; a sparse
    layer's pads (:class:`scenarios.paged.PagedBytes` whose fill is ``want``): the pads it holds."""
    if isinstance(pads, PagedBytes) and pads.blank == want:
        return sorted(k for k, v in pads.pages.items() if v != want)
    return [k for k in range(len(pads) // pad) if pads[k * pad:(k + 1) * pad] != want]
