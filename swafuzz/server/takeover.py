"""The decode side's takeover of a transferred prompt (prefill/decode disaggregation), predicted
from the Case (plain Python; the sglang target's record: ``targets/sglang/pipeline/disagg.py``).

A request handed over by the prefill server with its prompt and first output token fills
``prompt_len`` tokens on the decode side (the first output's KV is written by its first
decode). With pages larger than one token its KV is pre-allocated with an SWA *tail* only:

* the window's start ``max(0, fill - W)`` rounded down to a page; ``tail = fill - start``;
* full side: ``ceil(fill / P)`` fresh pages (page 0 never), the slots continuous within each
  page, none held by a live token; its ``req_to_token`` row holds them in order;
* SWA side: the tail's positions get fresh SWA slots (outside page 0, at their full slot's page
  offset, continuous within a page, none held by a live request's in-window token); every
  position before the window's start maps to 0 (its mapping reset, a recycled page's too);
* free full tokens fall by ``ceil(fill / P) * P``, free SWA tokens by ``ceil(tail / P) * P``.

With page 1 the release allocates the whole prompt on both sides (no tail path).
"""

from __future__ import annotations

from swafuzz.server.case import ServerCase


def tail_start(case: ServerCase, fill: int) -> int:
    """The first position whose KV gets an SWA slot."""
    P, W = case.config.page_size, case.model.sliding_window
    if P == 1:
        return 0
    return max(0, fill - W) // P * P


def judge_takeover(case: ServerCase, rid: int, rec: dict, live_full=(), live_swa=()
                   ) -> list[str]:
    """Every way ``rec`` (:func:`swafuzz.targets.sglang.pipeline.disagg.takeover`'s record)
    differs from the prediction; ``live_full`` / ``live_swa``: the slots other live requests
    hold (in-window SWA slots) when it is taken over."""
    P = case.config.page_size
    fill = case.requests[rid].prompt_len
    start = tail_start(case, fill)
    loc, m = rec["loc"], rec["mapping"]
    out = []
    if len(loc) != fill:
        return [f"request {rid}: {len(loc)} full slots pre-allocated for {fill} tokens"]
    if rec["row"] != loc:
        out.append(f"request {rid}'s req_to_token row {rec['row']}, its slots {loc}")
    for pos, full in enumerate(loc):
        fresh = pos % P == 0
        if full < P or full in live_full or (fresh and full % P) or \
                (not fresh and full != loc[pos - 1] + 1):
            out.append(f"request {rid} position {pos}: full slot {full} is not the next slot "
                       f"of a fresh page (page {P}, slots {loc})")
            break
    for pos in range(start):
        if m[pos] != 0:
            out.append(f"request {rid} position {pos} (before the window's start {start}): "
                       f"full slot {loc[pos]} maps to SWA slot {m[pos]} (was "
                       f"{rec['mapping_before'][pos]}), expected 0 (reset)")
            break
    tail = m[start:]
    for k, swa in enumerate(tail):
        pos = start + k
        fresh = pos % P == 0
        if swa < P or swa in live_swa or swa % P != loc[pos] % P or \
                (not fresh and swa != m[pos - 1] + 1):
            out.append(f"request {rid} position {pos} (window from {start}): SWA slot {swa} "
                       f"for full slot {loc[pos]} is not a fresh slot at its page offset")
            break
    if len(set(tail)) != len(tail):
        out.append(f"request {rid}: its tail's SWA slots {tail} repeat")
    want = [rec["free_before"][0] - -(-fill // P) * P,
            rec["free_before"][1] - -(-(fill - start) // P) * P]
    if rec["free_after"] != want:
        out.append(f"request {rid}: free [full, SWA] tokens {rec['free_after']} after the "
                   f"pre-allocation, expected {want} (tail of {fill - start} tokens)")
    return out
