"""The prefix-cache hit a radix-cache Case guarantees (plain Python over the Case's plan; the
check ``prefix_hit`` of :mod:`.server_oracle`): a lower bound, so a match that comes up short of
a prefix the tree must hold (a lost share: the request computes again what it could read) is a
finding, while anything the release may lawfully refuse is not bounded.

What the tree holds, from the Case alone (page ``P``, window ``W``, ``K = max(W, P)`` rounded up
to whole pages):

* after an EXTEND, each request that runs on (or stashes a chunk) publishes its computed tokens
  ``0..e-1`` under the key ``tokens[:floor_P(e - 1)]``; a finished request, when it leaves,
  publishes ``tokens[:floor_P(L - 1)]`` (``L``: prompt plus every output); an aborted one adds
  nothing (what it published before stays);
* the SWA KV of a published key is live from its frontier on: the release frees a request's
  SWA below ``floor_P(pre_len - K)`` at most, so a key ending at ``floor_P(pre_len)`` keeps a
  full window of live SWA behind its end (0.5.23's rule; 0.5.22 kept ``max(W, P)`` unrounded
  and freed a page too many where the window is no whole number of pages: the ledger's
  ``swa-frontier-unaligned-window``), with ``pre_len`` ``e - 1`` at a publish after an EXTEND
  and at most ``L`` when a request leaves;
* the release matches at most ``fill - 1`` tokens, page-aligned, and only where a window of
  live SWA ends (or SWA is live from the first token).

So a request starting its first EXTEND is owed ``h = floor_P(min(lcp, fill - 1))`` tokens of
any published key whose live SWA covers them (frontier 0) or reaches ``W`` behind ``h``. Not
bounded: a request computing again after a retraction, and every request after the tree evicted
anything (the release's memory-pressure policy, observed: ``ServerObs.tree["evicts"]``), or when
the pipeline could not observe evictions.
"""

from __future__ import annotations

from dataclasses import dataclass


def kept_tokens(window: int, page: int) -> int:
    """``K``: the tokens of live SWA a request keeps behind its frontier, ``max(W, P)`` rounded
    up to whole pages (0.5.23's rule; the server kind draws group prefixes around it)."""
    return -(-max(window, page) // page) * page


@dataclass(frozen=True)
class Published:
    key: tuple[int, ...]  # the token ids the tree holds under one path
    frontier: int  # SWA KV is live from here on (an upper bound of the release's frontier)
    by: str  # who published it, for the message


def _lcp(a, b) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class HitBound:
    """The walk's published keys and the bound (module docstring). ``tokens``: request -> its
    token ids (prompt, then outputs); ``prompts``: request -> prompt length; ``evicts``: the
    observed evictions (forwards run before each), None when not observed."""

    def __init__(self, tokens: dict, prompts: dict, max_new: dict, page: int, window: int,
                 evicts: list[int] | None):
        self.tokens, self.prompts, self.max_new = tokens, prompts, max_new
        self.P, self.W = page, window
        self.K = kept_tokens(window, page)
        self.evicts = evicts
        self.pub: list[Published] = []
        self.started: set[int] = set()
        self.off = evicts is None  # a retraction, or evictions not observed: no bound

    def _floor(self, n: int) -> int:
        return max(0, n) // self.P * self.P

    def owed(self, rid: int) -> tuple[int, Published | None]:
        """The tokens request ``rid``'s first match must cover at least, and whose key owes it."""
        fill, toks = self.prompts[rid], self.tokens[rid]
        best, src = 0, None
        for p in self.pub:
            h = self._floor(min(_lcp(toks[:fill], p.key), fill - 1))
            if h > best and (p.frontier == 0 or h - p.frontier >= self.W):
                best, src = h, p
        return best, src

    def check(self, ev) -> str | None:
        """Before EXTEND ``ev``: each request starting its first EXTEND matched at least what is
        owed, unless the bound is off (module docstring)."""
        if ev.mode != "EXTEND":
            return None
        evicted = self.off or any(k < ev.index for k in self.evicts)
        short = []
        for rid, (start, _) in zip(ev.rids, ev.spans):
            if rid in self.started:
                continue
            self.started.add(rid)  # every request of the batch: its first EXTEND is this one
            if evicted:
                continue
            owed, src = self.owed(rid)
            if start < owed:
                short.append(f"request {rid}'s prefix-cache hit covers {start} tokens; the tree "
                             f"holds its first {owed} with a window of live SWA ({src.by}, SWA "
                             f"live from position {src.frontier} at most): a lost share")
        return "; ".join(short) or None

    def after_extend(self, ev) -> None:
        """The publishes after EXTEND ``ev``: every request that runs on or stashes a chunk."""
        for rid, (start, n) in zip(ev.rids, ev.spans):
            end = start + n
            if end == self.prompts[rid] and self.max_new[rid] <= 1:
                continue  # finished by this EXTEND: published when it leaves
            self.pub.append(Published(tuple(self.tokens[rid][:self._floor(end - 1)]),
                                      self._floor(end - 1 - self.K),
                                      f"published by request {rid} after forward {ev.index}"))

    def leave(self, rid: int, aborted: bool) -> None:
        if aborted:
            return
        total = self.prompts[rid] + self.max_new[rid]
        self.pub.append(Published(tuple(self.tokens[rid][:self._floor(total - 1)]),
                                  self._floor(total - self.K),
                                  f"published by request {rid} when it left"))

    def retracted(self) -> None:
        self.off = True
