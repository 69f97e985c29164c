"""Capacity bookkeeping for the sharing triggers (rejected draft tokens, prefix sharing).

:class:`SharingPlanner` extends :class:`scenarios.planner.Planner` with abstract pages (counter
ids): which live requests hold each full page and whether its SWA page is taken, so the triggers
stay feasible: a verify with ``accept`` gives back pages past the last accepted token's,
``finish`` only pages no other live request holds, ``evict`` skips shared pages, and a finish lets
survivors' shared pages below their frontier give back SWA pages. Semantics:
``features/{dense,verify_reject,prefix_share}/SEMANTICS.md``; the oracle decides feasibility.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swafuzz.scenarios.case import Step
from swafuzz.scenarios.planner import Planner, pages_for


@dataclass
class SharingPlanner(Planner):
    pages: dict[int, list[int]] = field(default_factory=dict)  # rid -> page ids by position
    holders: dict[int, set[int]] = field(default_factory=dict)  # page id -> live rids
    swa_taken: dict[int, bool] = field(default_factory=dict)  # page id -> SWA page still held
    next_page: int = 0

    # ------------------------------------------------------------- pages
    def _new_pages(self, rid: int, count: int) -> None:
        for _ in range(count):
            pid = self.next_page
            self.next_page += 1
            self.pages[rid].append(pid)
            self.holders[pid] = {rid}
            self.swa_taken[pid] = True

    def _drop_swa(self, pid: int) -> None:
        if self.swa_taken.get(pid):
            self.swa_taken[pid] = False
            self.free_swa += 1

    def _extend(self, rids: list[int], n: int) -> None:
        for r in rids:
            self.pages.setdefault(r, [])
            self._new_pages(r, pages_for(self.reqs[r][0] + n, self.pool.page_size)
                            - pages_for(self.reqs[r][0], self.pool.page_size))
        super()._extend(rids, n)

    # ------------------------------------------------------------- actions
    def admit(self, length: int) -> int | None:
        self.pages[self.next_rid] = []
        rid = super().admit(length)
        if rid is None:
            self.pages.pop(self.next_rid, None)
        return rid

    def prefix_choices(self, rid: int) -> list[int]:
        """Valid prefix lengths on live request ``rid`` for a new request (multiples of P up
        to its length, the SWA window before the prefix end still live)."""
        p, w = self.pool.page_size, self.pool.window
        length, ev = self.reqs[rid]
        return [n for n in range(p, length + 1, p) if ev == 0 or n - ev >= w]

    def admit_prefix(self, src: int, n: int, length: int) -> int | None:
        """A new request of ``length`` tokens whose first ``n`` are ``src``'s (prefix hit)."""
        p = self.pool.page_size
        need = pages_for(length - n, p)
        if need > self.free_full or need > self.free_swa:
            return None
        rid = self.next_rid
        self.next_rid += 1
        shared = self.pages[src][: n // p]
        self.pages[rid] = list(shared)
        for pid in shared:
            self.holders[pid].add(rid)
        self.reqs[rid] = [n, min(self.reqs[src][1], n)]
        self._extend([rid], length - n)
        self.steps.append(Step(op="admit", rid=rid, length=length, prefix_rid=src,
                               prefix_len=n))
        return rid

    def verify_accept(self, rids: list[int], accept: tuple[int, ...], exec_: str) -> bool:
        """A verify of ``rids`` whose requests accept ``accept`` draft tokens; the pages past
        each last accepted token's page go back after the forward."""
        ndt, p = self.graph.num_draft_tokens, self.pool.page_size
        if not self.can_extend(rids, ndt):
            return False
        before = {r: self.reqs[r][0] for r in rids}
        self._extend(rids, ndt)
        for r, a in zip(rids, accept):
            keep = before[r] + a
            for pid in self.pages[r][pages_for(keep, p):]:
                self.holders.pop(pid)
                self.swa_taken.pop(pid)
                self.free_full += 1
                self.free_swa += 1
            del self.pages[r][pages_for(keep, p):]
            self.reqs[r][0] = keep
        self.steps.append(Step(op="verify", rids=tuple(rids), accept=tuple(accept),
                               exec=exec_))
        return True

    def evict(self, rid: int) -> None:
        p, w = self.pool.page_size, self.pool.window
        length, ev = self.reqs[rid]
        frontier = max(ev, ((length - w) // p) * p) if length > w else ev
        for pid in self.pages[rid][ev // p: frontier // p]:
            if self.holders[pid] == {rid}:
                self._drop_swa(pid)
        self.reqs[rid][1] = max(ev, frontier)
        self.steps.append(Step(op="evict", rid=rid))

    def finish(self, rid: int) -> None:
        p = self.pool.page_size
        self.reqs.pop(rid)
        for pid in self.pages.pop(rid):
            self.holders[pid].discard(rid)
            if not self.holders[pid]:
                self.free_full += 1
                self._drop_swa(pid)
                del self.holders[pid]
        for r, (_, ev) in self.reqs.items():  # deferred evictions of now unshared pages
            for pid in self.pages[r][: ev // p]:
                if self.holders[pid] == {r}:
                    self._drop_swa(pid)
        self.steps.append(Step(op="finish", rid=rid))
