"""Capacity bookkeeping for scenario generation: plain arithmetic, no slot ids. Strategies generate
only steps that fit (pages on both allocators, a bucket per graph step), tracking lengths,
frontiers and free page counts under ``features/dense/SEMANTICS.md``; the oracle is the reference
for feasibility, and a disagreement is reported as a harness bug.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swafuzz.scenarios.case import GraphConfig, PoolConfig, Step


def pages_for(n: int, p: int) -> int:
    return -(-n // p)


@dataclass
class Planner:
    pool: PoolConfig
    graph: GraphConfig
    free_full: int = 0
    free_swa: int = 0
    reqs: dict[int, list[int]] = field(default_factory=dict)  # rid -> [length, evicted]
    next_rid: int = 0
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.free_full = self.pool.full_pages
        self.free_swa = self.pool.swa_pages - self.pool.swa_held_pages  # held: never free

    # ---------------------------------------------------------------- queries
    @property
    def max_bs(self) -> int:
        return self.graph.buckets[-1]

    def extend_cost(self, rids: list[int], n: int) -> int:
        p = self.pool.page_size
        return sum(pages_for(self.reqs[r][0] + n, p) - pages_for(self.reqs[r][0], p) for r in rids)

    def can_extend(self, rids: list[int], n: int) -> bool:
        c = self.extend_cost(rids, n)
        return c <= self.free_full and c <= self.free_swa

    def live(self) -> list[int]:
        return sorted(self.reqs)

    # ---------------------------------------------------------------- actions
    def _extend(self, rids: list[int], n: int) -> None:
        c = self.extend_cost(rids, n)
        self.free_full -= c
        self.free_swa -= c
        for r in rids:
            self.reqs[r][0] += n

    def admit(self, length: int) -> int | None:
        p = self.pool.page_size
        need = pages_for(length, p)
        if need > self.free_full or need > self.free_swa:
            return None
        rid = self.next_rid
        self.next_rid += 1
        self.reqs[rid] = [0, 0]
        self._extend([rid], length)
        self.steps.append(Step(op="admit", rid=rid, length=length))
        return rid

    def forward_extend(self, op: str, rids: list[int], n: int, exec_: str, **kw) -> bool:
        if not self.can_extend(rids, n):
            return False
        self._extend(rids, n)
        self.steps.append(Step(op=op, rids=tuple(rids), exec=exec_, **kw))
        return True

    def evict(self, rid: int) -> None:
        p, w = self.pool.page_size, self.pool.window
        length, ev = self.reqs[rid]
        frontier = max(ev, ((length - w) // p) * p) if length > w else ev
        if frontier > ev:
            self.free_swa += (frontier - ev) // p
            self.reqs[rid][1] = frontier
        self.steps.append(Step(op="evict", rid=rid))

    def finish(self, rid: int) -> None:
        p = self.pool.page_size
        length, ev = self.reqs.pop(rid)
        self.free_full += pages_for(length, p)
        self.free_swa += pages_for(length, p) - ev // p
        self.steps.append(Step(op="finish", rid=rid))
