"""Oracle side of the two allocator triggers of issue 10 item 4 (plain Python, no torch).

* :func:`reject_cut`: the positions a ``verify`` with ``accept`` keeps reserved and frees
  (sglang 0.5.12 ``EagleVerifyInput.verify``, ``align_evict_mask_to_page_size``);
* :func:`pages_held_by_others`: the lock reference of a full page under prefix sharing (``admit``
  with ``prefix_rid`` / ``prefix_len``; ``SWARadixCache``); :func:`effective_prefix`: the tokens
  an ``admit`` shares after the features' caps;
* :func:`expected_layout`: from the Case alone, after every step, each live request's token
  count, eviction frontier, reserved verify slots and shared leading tokens, which
  :func:`sharing_invariants` compares with the engine's request table and mapping.

Semantics: ``features/{dense,verify_reject,prefix_share}/SEMANTICS.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swafuzz import features
from swafuzz.scenarios.case import STEP_OPS, Case


def effective_prefix(case: Case, s) -> int:
    """The tokens an ``admit`` step shares (0: no hit): its ``prefix_len``, after every cap a
    feature puts on a hit (slot ``OraclePart.prefix_cap``: the late-layer tail's re-prefill cap,
    T5). For the Case-arithmetic oracles (here and :mod:`oracles.paths`)."""
    if s.prefix_rid is None or s.prefix_len is None:
        return 0
    n = s.prefix_len
    for part in features.parts("oracle"):
        n = part.prefix_cap(case, s, n)
    return n


def reject_cut(length_before: int, accepted: int, num_draft_tokens: int, page_size: int
               ) -> tuple[int, int, int]:
    """``(keep, cut, end)`` positions of one request after a verify with ``accepted`` tokens:
    positions ``[0, keep)`` stay tokens, ``[keep, cut)`` are reserved (the rest of the page of
    the last accepted token, still mapped), ``[cut, end)`` are freed (whole pages)."""
    keep = length_before + accepted
    end = length_before + num_draft_tokens
    cut = min(-(-keep // page_size) * page_size, end)
    return keep, cut, end


def pages_held_by_others(tokens: dict[int, list[int]], rid: int, page_size: int) -> set[int]:
    """Full pages some live request other than ``rid`` holds (a token on the page)."""
    return {f // page_size for r, toks in tokens.items() if r != rid for f in toks}


@dataclass
class ReqLayout:
    length: int
    evicted: int
    reserved: int = 0  # reserved verify slots after the last token (same page, still mapped)
    shares: dict[int, int] = field(default_factory=dict)  # other live rid -> shared lead tokens


def uses_triggers(case: Case) -> bool:
    """The Case admits with a prefix or verifies with ``accept``."""
    return any((s.op == "admit" and s.prefix_rid is not None) or (s.op == "verify" and s.accept)
               for s in case.steps)


def expected_layout(case: Case) -> list[dict[int, ReqLayout]]:
    """After every step: ``{rid: ReqLayout}`` of the live requests, by arithmetic over the Case.

    Sharing is symmetric and transitive over common leading tokens: a request admitted with
    ``prefix_len`` n on ``prefix_rid`` shares n leading tokens with ``prefix_rid`` and
    ``min(n, k)`` with every request ``prefix_rid`` shares k with. Reserved slots: a verify
    with ``accept`` leaves ``cut - keep`` (:func:`reject_cut`); any later extension of the
    request consumes them first."""
    g, P, window = case.graph, case.pool.page_size, case.pool.window
    live: dict[int, ReqLayout] = {}
    out: list[dict[int, ReqLayout]] = []

    def grow(rid: int, n: int) -> None:
        r = live[rid]
        r.length += n
        r.reserved = max(0, r.reserved - n)

    for s in case.steps:
        if s.op == "admit":
            n = effective_prefix(case, s)  # the hit after a late-layer tail's cap (T5)
            if s.prefix_rid is not None and s.prefix_rid in live and n:
                src = live[s.prefix_rid]
                new = ReqLayout(s.length, min(src.evicted, n))
                new.shares[s.prefix_rid] = n
                for other, k in src.shares.items():
                    new.shares[other] = min(n, k)
                for other, k in new.shares.items():
                    live[other].shares[s.rid] = k
                live[s.rid] = new
            else:
                live[s.rid] = ReqLayout(s.length, 0)
        elif s.op == "decode" or s.op in STEP_OPS and STEP_OPS[s.op].grows:
            for r in s.rids:
                grow(r, STEP_OPS[s.op].grows if s.op in STEP_OPS else 1)
        elif s.op == "verify":
            for j, r in enumerate(s.rids):
                before = live[r].length
                grow(r, g.num_draft_tokens)
                if s.accept:
                    keep, cut, _ = reject_cut(before, s.accept[j], g.num_draft_tokens, P)
                    live[r].length, live[r].reserved = keep, cut - keep
        elif s.op == "draft_decode":
            for r in s.rids:
                grow(r, g.topk * g.num_steps)
        elif s.op == "extend":  # issue 12 (window extends, after a verify with accept)
            for r, n in zip(s.rids, s.lengths):
                grow(r, n)
        elif s.op == "evict":
            r = live[s.rid]
            r.evicted = max(r.evicted, r.length - window) // P * P
        elif s.op == "finish":
            live.pop(s.rid, None)
            for r in live.values():
                r.shares.pop(s.rid, None)
        out.append({r: ReqLayout(v.length, v.evicted, v.reserved, dict(v.shares))
                    for r, v in live.items()})
    return out


def sharing_invariants(mapping: list[int], requests: dict[int, tuple[list[int], int]],
                       layout: dict[int, ReqLayout], page_size: int) -> list[str]:
    """Rules over the new bookkeeping, one message per violation (rule name first): ``shared`` (a
    request's first k tokens are the very full slots of each request it shares k with), ``token-dup``
    (a slot two requests hold lies in their shared prefix), ``evicted`` (below the frontier unmapped
    unless another live request holds the page), ``reserved`` (reserved verify slots mapped at the
    next offsets of the last page, both sides), ``orphan`` (every mapped full slot is a live token or
    reserved slot)."""
    P, M, out = page_size, mapping, []
    holders: dict[int, set[int]] = {}
    for rid, (toks, _) in requests.items():
        for f in toks:
            holders.setdefault(f // P, set()).add(rid)
    owner: dict[int, tuple[int, int]] = {}
    reserved: set[int] = set()
    for rid, (toks, ev) in sorted(requests.items()):
        lay = layout.get(rid)
        if lay is not None:
            for other, k in sorted(lay.shares.items()):
                theirs = requests[other][0] if other in requests else None
                if theirs is not None and toks[:k] != theirs[:k]:
                    p = next((q for q in range(k) if q >= len(toks) or q >= len(theirs)
                              or toks[q] != theirs[q]), 0)
                    out.append(f"shared: request {rid} position {p} differs from request "
                               f"{other}, which shares {k} leading tokens with it")
        for pos, f in enumerate(toks):
            o = owner.get(f)
            if o is not None and (lay is None or pos >= lay.shares.get(o[0], 0)):
                out.append(f"token-dup: full slot {f} owned by request {o[0]} position {o[1]} "
                           f"and request {rid} position {pos}, outside a shared prefix")
            owner.setdefault(f, (rid, pos))
            if 0 <= f < len(M) - 1 and pos < ev and M[f] != 0 and \
                    holders.get(f // P, set()) <= {rid}:
                out.append(f"evicted: request {rid} position {pos} (full slot {f}) below "
                           f"frontier {ev} still mapped: M[{f}] = {M[f]}, no other live "
                           f"request holds page {f // P}")
        if not toks:
            continue
        last = toks[-1]
        res = lay.reserved if lay is not None else 0
        for k in range(1, res + 1):
            f = last + k
            if f >= len(M) - 1 or f // P != last // P or M[last] <= 0 or M[f] != M[last] + k:
                got = M[f] if f < len(M) - 1 else "out of range"
                out.append(f"reserved: request {rid}: reserved verify slot {k} of {res} after "
                           f"full slot {last} should be full slot {f} -> SWA slot "
                           f"{M[last] + k} on the same pages, M[{f}] = {got}")
                break
            reserved.add(f)
    for f, sv in enumerate(M[:-1]):
        if sv != 0 and f not in owner and f not in reserved:
            out.append(f"orphan: full slot {f} mapped to SWA slot {sv} but no live request owns "
                       "it or reserves it")
    return out
