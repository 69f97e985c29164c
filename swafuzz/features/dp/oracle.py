"""DP attention's part of the engine oracle (features/dp/SEMANTICS.md, spec §5.4): plain Python.

Every rank forwards the same rows (MAX_LEN): a batch pads to the maximum over the ranks
(``Step.rank_tokens``), a fixed-width speculative batch (target verify, multi-step draft) to whole
requests; a rank whose peer extends runs EXTEND, eagerly (``Step.dp_extend``). Slots:
``step_check``, ``batch_pad``, ``rewrite``, and ``dp_decode``'s ``step_ops`` / ``path_ops``.
"""

from __future__ import annotations

from swafuzz.features.dp.server_rules import attn_tp_rows
from swafuzz.features.parts import OraclePart
from swafuzz.oracles.errors import CaseInfeasible

#: the ops that may carry other ranks' counts, and those a peer's EXTEND may rewrite
PADDED_OPS = ("dp_decode", "verify", "draft_extend", "draft_decode")
REWRITTEN_OPS = ("dp_decode", "verify", "draft_extend")


def step_check(i: int, s) -> None:
    """The other ranks' token counts of a DP step (spec §5.4): raises CaseInfeasible."""
    if s.rank_tokens and s.op not in PADDED_OPS:
        raise CaseInfeasible(i, f"rank_tokens not allowed for op {s.op}")
    if len(s.rank_tokens) > 7 or any(t < 0 for t in s.rank_tokens):
        raise CaseInfeasible(i, "rank_tokens needs at most 7 counts >= 0")
    if s.dp_extend:
        if s.op not in REWRITTEN_OPS:
            raise CaseInfeasible(i, f"dp_extend not allowed for op {s.op}")
        if not s.rank_tokens or not s.rids:
            raise CaseInfeasible(i, "dp_extend needs rank_tokens and at least one rid")


def rewrite(s) -> str | None:
    """A batch another rank extends runs as EXTEND (spec §5.4 (3)); None otherwise."""
    return "EXTEND" if s.dp_extend else None


def batch_pad(s, own: int, reqs: int, width: int, whole: bool):
    """MAX_LEN padding of a batch of ``own`` rows, ``reqs`` requests of ``width`` rows: (eager
    rows, batch size for the bucket, rows padded to); None without other ranks. ``whole``:
    fixed-width batch, padded to whole requests of ``width`` rows."""
    if not s.rank_tokens:
        return None
    padded = max([own, *s.rank_tokens])
    if whole:
        padded = -(-padded // width) * width
    return padded, max(reqs, -(-padded // width)), padded


def _mode(s) -> str:
    return rewrite(s) or ("DECODE" if s.rids else "IDLE")


def shadow_dp_decode(sh, i: int, s, ex: str) -> None:
    """``dp_decode`` on the shadow: one token per request, the batch padded to the ranks'
    maximum (an empty rank: IDLE on dummy rows)."""
    if not 1 <= len(s.rank_tokens) <= 7 or any(t < 0 for t in s.rank_tokens):
        raise CaseInfeasible(i, "rank_tokens needs 1..7 counts >= 0")
    padded = max(len(s.rids), *s.rank_tokens)
    if padded < 1:
        raise CaseInfeasible(i, "dp_decode with no rows on any rank")
    for rid in s.rids:
        sh.live(i, rid)
    sh.graph_ok(i, ex, sh.bucket(padded))
    sh.check_alloc(i, [(rid, 1) for rid in s.rids])
    locs = [sh.extend(rid, 1)[0] for rid in s.rids]
    sh.forward(i, 0, "target", _mode(s), ex, locs, padded, sh.bucket(padded))


def path_dp_decode(case, s, add) -> None:
    """``dp_decode``'s one forward on the decode runner, padded to the ranks' maximum."""
    n = len(s.rids)
    padded = max([n, *s.rank_tokens])
    add(0, _mode(s), "decode", padded, 1, n, padded, pad_to=padded)


STEP_OPS = {"dp_decode": shadow_dp_decode}
PATH_OPS = {"dp_decode": path_dp_decode}


class DPOracle(OraclePart):
    """The oracle part: the ranks' step rules, rewrite and padding, ``dp_decode``'s forwards."""

    step_check = staticmethod(step_check)
    rewrite = staticmethod(rewrite)
    batch_pad = staticmethod(batch_pad)
    server_pad = staticmethod(attn_tp_rows)
    path_ops = PATH_OPS
