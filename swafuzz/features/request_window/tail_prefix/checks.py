"""The ``compressor`` and ``reprefill`` checks (addendum §5 E1, T5, §6 A13): the target's
window-path forwards against the window oracle's.

``compressor`` (E1), per EXTEND forward of the window / tail path: the compressors' int64 write
locations (0 for a folded replay row, else the row's full location), the ratio-4 slots
(``loc // 4`` where ``(pos + 1) % 4 == 0``, else 0), and whether the ratio-1/2 source
compressors ran (not on a separate replay forward). ``reprefill`` (T5 / A13): every prefix
``admit`` on a pool with a late-layer tail computes the rows the Case determines after the radix
cap (at least the last ``min(W, length)`` tokens), reported with the hit the target used."""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.features.request_window.channel import expected, observed
from swafuzz.features.request_window.lane import failed, fwd_label, window_pairs

_REPREFILL_DEFENCE = (
    "names the cause of a late-layer prefix hit that skips the re-prefill (T5 / A13): a hit longer "
    "than the cap always allocates fewer tokens than the Case determines, which invariants "
    "(request table), pool_bytes / tail (paged pool) or window (rows, workspace, ring) see too; "
    "reprefill says which hit and why")


def _first(a: list, b: list) -> int:
    bad = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
    return bad[0] if bad else min(len(a), len(b))


@check("compressor")
def check_compressor(case, obs, exp) -> list[Failure]:
    """See the module docstring. Proven by ``fold_compresses_replay_rows`` (E1, this check
    alone)."""
    if expected(exp) is None:
        return []
    pairs, _ = window_pairs(obs, exp, "compressor")  # missing / extra forwards: window's finding
    fails: list[Failure] = []
    for o, e in pairs:
        want = getattr(e, "comp", None)
        if want is None:
            continue
        got = getattr(o, "comp", None)
        problem = None
        if got is None:
            problem = ("no compressor locations observed for an EXTEND forward", "missing")
        elif got.dtype != want.dtype or got.c4_dtype != want.dtype:
            problem = (f"compressor locations are {got.dtype} / c4 {got.c4_dtype}, expected "
                       f"{want.dtype} (out_cache_loc's dtype)", "dtype")
        elif got.loc != want.loc:
            r = _first(got.loc, want.loc)
            exp_v = want.loc[r] if r < len(want.loc) else "-"
            what = "a folded replay row: its compressed KV is cached" if exp_v == 0 else "a row"
            problem = (f"{len(got.loc)} rows, expected {len(want.loc)}; first differing row {r} "
                       f"({what}): expected location {exp_v}, got "
                       f"{got.loc[r] if r < len(got.loc) else '-'} (E1)", "loc")
        elif got.c4 != want.c4:
            r = _first(got.c4, want.c4)
            problem = (f"row {r}: ratio-4 compressor slot {got.c4[r] if r < len(got.c4) else '-'}"
                       f", expected {want.c4[r] if r < len(want.c4) else '-'}", "c4")
        elif got.low_ratio != want.low_ratio:
            problem = (f"ratio-1/2 source compressors {'ran' if got.low_ratio else 'skipped'}, "
                       f"expected {'run' if want.low_ratio else 'skipped'} (a separate replay "
                       "forward skips them)", "low_ratio")
        failed(fails, "compressor", fwd_label(o), problem, o.step, o.fwd)
    return fails


@check("reprefill", defence=_REPREFILL_DEFENCE)
def check_reprefill(case, obs, exp) -> list[Failure]:
    """See the module docstring. Fires on ``prefix_hit_without_reprefill`` (A13 / T5); defence
    in depth (reason in its ``@check``)."""
    w = expected(exp)
    W, L = case.pool.window, case.pool.late_layer_start
    if w is None or not L:
        return []
    fails = []
    for i, s in enumerate(case.steps):
        if s.op != "admit" or s.prefix_rid is None:
            continue
        if obs.error is not None and i >= obs.error["step"]:
            break
        ef = [e for e in w.forwards if e.step == i]
        of = [o for o in observed(obs).forwards if o.step == i]
        if not ef or not of or not of[-1].stores:
            continue  # window's finding (a missing forward)
        want = len(ef[-1].locs[0])
        got = of[-1].stores[0].rows
        if got == want:
            continue
        floor = min(W, s.length)
        fails.append(Failure(
            "reprefill", f"step {i} (admit {s.rid}, prefix of {s.prefix_rid}, prefix_len "
            f"{s.prefix_len}, length {s.length}): the EXTEND computes {got} rows, the Case "
            f"determines {want}; a hit on a pool with a late-layer tail must leave at least the "
            f"last min(W, length) = {floor} tokens to the extend (T5 / A13: late layers write "
            f"only tail rows, a longer hit reads SWA they never wrote)", "hit", i, of[-1].fwd))
    return fails
