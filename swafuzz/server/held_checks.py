"""The server-level check of the KV the live requests hold (plain Python over the Case's plan;
:mod:`swafuzz.server.oracle`'s walk calls it).

``kv_held``: the allocator starts with ``model.full_tokens`` free full tokens and
``model.swa_tokens`` free SWA tokens; after every forward's allocation and after every step's
releases its free full tokens are that start less, per request still holding KV (prefilled,
being chunked or decoding; not yet released, aborted or retracted), its tokens rounded up to
whole pages (a request owns its pages: its next token continues its last page); after the run,
every request released, both sides are back to their start (no leak, no double free). The SWA
side in between is not predicted (the window eviction's timing is the release's interval).
Not judged with the radix cache on (a released prefix stays in the tree) or under a request
window (its own slots, :mod:`swafuzz.features.request_window`).
"""

from __future__ import annotations

from swafuzz.features.record import check
from swafuzz.server.case import ServerCase


def judged(case: ServerCase) -> bool:
    c = case.config
    return c.disable_radix_cache and not c.enable_encoder_swa_bounded_replay


def held_full(case: ServerCase, tokens: dict) -> int:
    """Full tokens the live requests hold: ``tokens``: request -> its tokens (any sequence)."""
    P = case.config.page_size
    return sum(-(-len(t) // P) * P for t in tokens.values())


@check("kv_held", level="server")
def kv_held(case: ServerCase, tokens: dict, free: list | None, when: str) -> str | None:
    """``free``: the observed ``[full, SWA]`` free tokens ``when`` (None or empty: not
    observed); ``tokens``: the live requests' tokens then (module docstring)."""
    if not free or not judged(case):
        return None
    want = case.model.full_tokens - held_full(case, tokens)
    if free[0] != want:
        held = {r: len(t) for r, t in sorted(tokens.items())}
        return (f"{when}: {free[0]} free full tokens, expected {want} ({case.model.full_tokens} "
                f"less the live requests' pages: tokens per request {held}, page "
                f"{case.config.page_size})")
    return None


def kv_end(case: ServerCase, obs) -> str | None:
    """Before and after a run that went to its end: every token of both sides free."""
    if not judged(case) or not obs.free:
        return None
    want = [case.model.full_tokens, case.model.swa_tokens]
    for when in ("before", "after"):
        got = obs.free.get(when)
        if when == "after" and (obs.error is not None or obs.out_of_scope is not None):
            break
        if got is not None and list(got[:2]) != want:
            return (f"{when} the run: {got[0]} free full and {got[1]} free SWA tokens, "
                    f"expected {want[0]} and {want[1]}")
    return None
