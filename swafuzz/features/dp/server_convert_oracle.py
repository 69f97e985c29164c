"""Attention-DP ranks with a prefill graph at server level: the ranks' vote, its padding and the
decode->extend conversion the oracle predicts (plain Python over the ranks' plans; spec §5.4,
``SEMANTICS.md``), and the check ``dp_convert``.

With ``cuda_graph_backend_prefill`` breakable and captured token counts ``B``
(``cuda_graph_bs_prefill``; the release captures them as given with attention TP 1), at every
step where some rank forwards, each rank votes (min-reduced over the ranks):

* an idle rank: yes;
* a rank with ``n`` tokens (EXTEND rows, DECODE requests): yes iff ``n <= max(B)`` and the
  smallest captured count ``>= n`` is at most ``2 n`` (the release's padding-waste bound);

and with every vote yes, some rank extending and the largest count ``m <= max(B)``, every rank
pads MAX_LEN to ``m`` (0.5.22) or to the smallest captured count ``>= m`` (0.5.23: one common
bucket); an idle rank then runs the dummy one-request EXTEND. A rank that DECODEs converts
(``convert_decode_to_extend``) when every vote is yes, some rank extends and no rank is idle: its
batch is a one-token EXTEND per request - extend length 1, prefix ``seq_len - 1``, position
``seq_len - 1``, ``seq_lens`` each request's length after the step, ``out_cache_loc`` the full
slots this step allocated, each still mapped to the SWA slot allocated with it.
"""

from __future__ import annotations

import re

from swafuzz.features.record import check

#: the release's bound on a replay's padding: the bucket holds at most this many times the tokens
PADDING_FACTOR = 2


def captured(case) -> tuple[int, ...]:
    """The prefill graph's captured token counts (empty: no prefill graph the ranks vote on)."""
    c = case.config
    if c.cuda_graph_backend_prefill != "breakable" or c.moe_a2a_backend is not None:
        return ()
    return tuple(sorted(set(c.cuda_graph_bs_prefill or ())))


def _bucket(n: int, caps) -> int | None:
    return min((b for b in caps if b >= n), default=None)


def _count(f) -> int:
    return 0 if f is None else f.rows if f.mode == "EXTEND" else len(f.rids)


def vote(case, fw: list) -> bool:
    """The ranks' min-reduced prefill-graph vote at a step (``fw``: each rank's forward or
    None)."""
    caps = captured(case)
    for f in fw:
        n = _count(f)
        if f is None:
            continue
        b = _bucket(n, caps)
        if b is None or b > PADDING_FACTOR * n:
            return False
    return True


def pads_to_bucket(target_version: str) -> bool:
    """Whether the release pads to the common captured bucket (0.5.23) or to the largest count
    (0.5.22); from the observation's ``target_version``."""
    m = re.match(r"sglang (\d+)\.(\d+)\.(\d+)", target_version or "")
    return m is not None and tuple(int(x) for x in m.groups()) >= (0, 5, 23)


def prefill_pad(case, fw: list, target_version: str) -> int | None:
    """The MAX_LEN row count every rank pads to under the prefill graph at a step, or None."""
    caps = captured(case)
    counts = [_count(f) for f in fw]
    if not caps or not any(f is not None and f.mode == "EXTEND" for f in fw):
        return None
    if not vote(case, fw) or max(counts) > max(caps):
        return None
    return _bucket(max(counts), caps) if pads_to_bucket(target_version) else max(counts)


def converts(case, fw: list, r: int) -> bool:
    """Whether rank ``r``'s DECODE at this step is converted to a one-token-per-request EXTEND."""
    f = fw[r]
    return (f is not None and f.mode == "DECODE" and bool(captured(case))
            and all(g is not None for g in fw) and any(g.mode == "EXTEND" for g in fw)
            and vote(case, fw))


def expected_conversions(case, plans: list[list]) -> list[dict[int, bool]]:
    """Per rank, forward index of each DECODE -> whether it is converted."""
    by_step = [{f.step: f for f in p} for p in plans]
    out: list[dict[int, bool]] = [{} for _ in plans]
    for t in sorted({t for s in by_step for t in s}):
        fw = [s.get(t) for s in by_step]
        for r, f in enumerate(fw):
            if f is not None and f.mode == "DECODE":
                out[r][f.index] = converts(case, fw, r)
    return out


@check("dp_convert", level="server")
def dp_convert(what: str, got: dict | None, converted: bool, lens: list[int],
               alloc: list[list[int]]) -> list[str]:
    """A rank's DECODE ``what`` against the predicted conversion: ``converted``; for a converted
    batch, per request (``lens``: its length after the step) extend length 1, prefix and
    position ``len - 1``, and ``out_cache_loc`` / its SWA slots the step's allocation ``alloc``
    (``[full, swa]`` per row)."""
    if got is None:
        return [f"{what}: no record of the release's decode->extend decision"]
    if bool(got.get("converted")) != converted:
        return [f"{what}: converted {bool(got.get('converted'))}, expected {converted}"]
    if not converted:
        return []
    want = {"extend_seq_lens": [1] * len(lens), "prefix_lens": [n - 1 for n in lens],
            "extend_num_tokens": len(lens), "positions": [n - 1 for n in lens],
            "seq_lens": list(lens), "out_cache_loc": [a[0] for a in alloc],
            "swa": [a[1] for a in alloc]}
    return [f"{what}: {k} {got.get(k)!r}, expected {v!r}" for k, v in want.items()
            if got.get(k) != v]
