"""The oracle of server-level Cases with the radix cache on: plain Python over the Case's plan and
the observed allocation, never the code it judges.

KV provenance: every slot the allocator hands out holds the KV of one token prefix, known from
the Case (the request and position its row is for: the prompt ids of
:func:`~swafuzz.server.timeline.prompt_ids`, then the stub sampler's outputs). Sharing through the
tree is correct exactly when a request reads, at position ``p``, slots holding the KV of its own
tokens ``0..p`` - whichever request computed them. The prefix-cache hits (how many tokens a
match covered) are observed, like retractions and admissions; every slot a hit hands over is
judged. Per forward, each check of that name:

* ``prefix_hit``: a request starting its first EXTEND matched at least the tokens the tree must
  hold for it with a window of live SWA (a lower bound from the Case, :mod:`.hit_bound`; off
  after a retraction or an observed eviction);
* ``prefix_reads``: what every live request reads. Before the step's allocation: a request
  computing from a hit starts on a page boundary, below its length; every live request's
  ``req_to_token`` row holds, at each position before the forward's writes, a full slot whose
  KV is of that request's own prefix (its own or a shared one), each position in a batch
  request's window maps to an SWA slot holding the same prefix's KV, and none of those slots
  is free in the allocator (a free under a reader). After the forward: no slot of a live row,
  nor of a batch request's window, is free;
* ``tree_leak``: no slot twice in the allocator's free lists (a double free), full and SWA,
  before each step's allocation and after each forward; after the run (every request left)
  and the tree evicted through the release's ``evict``, every slot ever handed out is free
  again, once (a leak: neither free nor owned; a lock reference never dropped keeps its path
  unevictable and shows here too);
* the core's ``allocation`` (a slot handed out held by no live request's row, nor in a live
  window: a slot owned twice), ``alloc_count``, ``write_targets``, ``batch_shape`` and
  ``window_reads`` over the rows as the tree left them;
* ``pool_bytes``: every SWA slot of every layer holds the last row stored there.
"""

from __future__ import annotations

from collections import Counter

from swafuzz.features.radix_tree.hit_bound import HitBound
from swafuzz.features.record import check
from swafuzz.server.dispatch_checks import forward_dispatch
from swafuzz.server.graph_checks import SEQ_LEN_FILL, batch_shape, graph_bucket, graph_fill
from swafuzz.server.graph_rows import GraphRows
from swafuzz.server.oracle import (
    ServerFailure,
    State,
    alloc_count,
    allocation,
    contracts,
    exec_path,
    observed_plan,
    pool_bytes,
    retraction,
    rows,
    window_reads,
    write_targets,
)
from swafuzz.server.timeline import Release, Retract, RetractionError, output_id, prompt_ids


def server_judge(case, obs, graphs: bool, disabled) -> list[ServerFailure] | None:
    """The failures of a radix-cache Case (hook ``oracle.server_judge``), or None for another."""
    if case.config.disable_radix_cache or obs.ranks:
        return None
    return judge(case, obs, disabled, graphs)


class Provenance:
    """Which token prefix each slot's KV is of: ``(request, position)`` of the row that computed
    it (the prefix itself: :meth:`key`)."""

    def __init__(self, case):
        self.tokens = {i: prompt_ids(case, i) + [output_id(i, k)
                                                 for k in range(r.max_new_tokens + 1)]
                       for i, r in enumerate(case.requests)}
        self.full: dict[int, tuple[int, int]] = {}
        self.swa: dict[int, tuple[int, int]] = {}
        self.handed_full: set[int] = set()
        self.handed_swa: set[int] = set()

    def key(self, rid: int, pos: int) -> tuple[int, ...]:
        return tuple(self.tokens[rid][:pos + 1])

    def same(self, got: tuple[int, int] | None, rid: int, pos: int) -> bool:
        return got is not None and got[1] == pos and self.key(*got) == self.key(rid, pos)

    def take(self, ev, alloc) -> None:
        k = 0
        for rid, (start, n) in zip(ev.rids, ev.spans):
            for pos in range(start, start + n):
                full, swa = alloc[k]
                self.full[full], self.swa[swa] = (rid, pos), (rid, pos)
                self.handed_full.add(full)
                self.handed_swa.add(swa)
                k += 1


def _keys(d: dict) -> dict:
    return {int(k): v for k, v in d.items()}


class _Walk:
    def __init__(self, case, obs):
        self.case, self.obs = case, obs
        self.P, self.W = case.config.page_size, case.model.sliding_window
        self.st = State(case)
        self.prov = Provenance(case)
        self.trees = _keys(obs.tree.get("forwards", {}))
        reqs = case.requests
        self.bound = HitBound(self.prov.tokens, {i: r.prompt_len for i, r in enumerate(reqs)},
                              {i: r.max_new_tokens for i, r in enumerate(reqs)}, self.P, self.W,
                              obs.tree.get("evicts"))

    @check("prefix_hit", level="server")
    def prefix_hit(self, ev) -> str | None:
        """Before EXTEND ``ev``: no request starting to compute matched less than the tree must
        hold for it (:meth:`HitBound.check`)."""
        return self.bound.check(ev)

    def hit(self, ev) -> str | None:
        """A request computing from a hit (new to the walk, start > 0) starts on a page
        boundary, below its length."""
        if ev.mode != "EXTEND":
            return None
        for rid, (start, n) in zip(ev.rids, ev.spans):
            if rid in self.st.tokens or not start:
                continue
            if start % self.P:
                return (f"request {rid}'s prefix-cache hit covers {start} tokens, not a whole "
                        f"number of pages ({self.P})")
            if n < 1:
                return f"request {rid}'s prefix-cache hit covers all its {start} tokens"
        return None

    def rows(self, ev, rec, tf) -> str | None:
        """Every live request's row before the forward's writes holds its own prefix's KV (the
        walk takes the rows as the tree left them)."""
        row_of = _keys(tf.get("rows", {}))
        batch = dict(zip(ev.rids, ev.spans))
        live = set(self.st.tokens) | set(batch)
        for rid in sorted(live):
            row = row_of.get(rid)
            if row is None:
                return f"request {rid} holds no req_to_token row"
            upto = batch[rid][0] if rid in batch else len(self.st.tokens[rid])
            if len(row) < upto:
                return f"request {rid}'s row has {len(row)} positions, {upto} computed"
            old, new = self.st.tokens.get(rid, []), []
            for p in range(upto):
                s = row[p]
                got = self.prov.full.get(s)
                if not self.prov.same(got, rid, p):
                    return (f"request {rid} position {p} reads full slot {s}, whose KV is "
                            f"{_of(got)}, not of its own prefix")
                keep = p < len(old) and old[p][0] == s
                new.append(old[p] if keep else (s, _at(rec.mapping, s)))
            self.st.tokens[rid] = new
            if rid not in batch:
                continue
            end = upto + batch[rid][1]
            for p in range(max(0, end - self.W), upto):  # the window's cached positions
                x = new[p][1]
                got = self.prov.swa.get(x)
                if not self.prov.same(got, rid, p):
                    return (f"request {rid} position {p} (full slot {new[p][0]}) reads SWA slot "
                            f"{x} in its window, whose KV is {_of(got)}, not of its own prefix")
        return None

    def freed(self, ev, lists: dict, when: str) -> str | None:
        """No slot a live request reads is free: full slots of its row, SWA slots of its window
        (after the forward, the batch's)."""
        free_full, free_swa = set(lists.get("full", [])), set(lists.get("swa", []))
        for rid, toks in sorted(self.st.tokens.items()):
            held = [f for f, _ in toks if f in free_full]
            if held:
                return (f"request {rid} still reads full slots {held[:8]}, which are free in the "
                        f"allocator ({when} the forward)")
            win = [s for _, s in toks[max(0, len(toks) - self.W):] if s in free_swa]
            if rid in ev.rids and win and when == "after":
                return (f"request {rid} reads SWA slots {win[:8]} in its window, which are free "
                        "in the allocator")
        return None

    @check("prefix_reads", level="server", defence=(
        "a slot freed under a reader is handed out again later (allocation: a slot owned "
        "twice); this names the reading request, its position and whose KV the slot holds at "
        "the first step it shows, and alone sees a live slot of another prefix handed over by "
        "a hit"))
    def prefix_reads(self, ev, rec, tf, when: str) -> str | None:
        """What every live request reads (module docstring): ``when`` "before" the step's
        allocation its hit and its row as the tree left it, owned; "after" the forward its
        row and window, owned."""
        if when == "before":
            return (self.hit(ev) or self.rows(ev, rec, tf)
                    or self.freed(ev, tf.get("before", {}), "before"))
        return self.freed(ev, tf, "after")

    @staticmethod
    def duplicates(lists: dict, when: str) -> str | None:
        for side in ("full", "swa"):
            dup = sorted(s for s, c in Counter(lists.get(side, [])).items() if c > 1)
            if dup:
                return f"{side} slots {dup[:8]} are twice in the allocator's free list ({when})"
        return None

    @check("tree_leak", level="server")
    def tree_leak(self, tf: dict | None = None) -> str | None:
        """No slot twice in a free list (a double free): at a forward (``tf``: its free lists
        before the step's allocation and after the forward); after the run and the tree's
        eviction, every slot ever handed out is free, once."""
        if tf is not None:
            return (self.duplicates(tf.get("before", {}), "before the forward")
                    or self.duplicates(tf, "after the forward"))
        tree = self.obs.tree
        if "end" not in tree:
            return None
        for side, handed in (("full", self.prov.handed_full), ("swa", self.prov.handed_swa)):
            end = Counter(tree["end"].get(side, []))
            dup = sorted(s for s, c in end.items() if c > 1)
            if dup:
                return (f"after the run {side} slots {dup[:8]} are twice in the free list (a "
                        "double free)")
            start = set(tree.get("start", {}).get(side, []))
            lost = sorted((start | handed) - set(end))
            if lost:
                return (f"after the run (every request left, the tree evicted) {side} slots "
                        f"{lost[:8]} ({len(lost)} in all) are neither free nor owned: leaked")
            extra = sorted(set(end) - start - handed)
            if extra:
                return f"after the run {side} slots {extra[:8]} are free but were never free"
        return None


def _at(mapping, s: int) -> int:
    return mapping[s] if 0 <= s < len(mapping) else -1


def _of(got) -> str:
    return "never computed" if got is None else f"request {got[0]} position {got[1]}'s"


def judge(case, obs, disabled=frozenset(), graphs: bool = False) -> list[ServerFailure]:
    """Every failure of a radix-cache Case's observation, earliest forward first (module
    docstring; ``disabled``: server checks not run; ``graphs``: the executor replays the decode
    graphs the Case captures, judged as the core judges them: the bucket, every row of the
    replay's buffers predicted, padded rows storing to the dummy slot 0)."""
    out: list[ServerFailure] = []

    def fail(name: str, fwd, msgs) -> bool:
        msgs = [m for m in ([msgs] if isinstance(msgs, str) else msgs or []) if m]
        if not msgs or name in disabled:
            return False
        out.extend(ServerFailure(name, fwd, m if fwd is None or m.startswith("forward ")
                                 else f"forward {fwd}: {m}") for m in msgs)
        return True

    raised = contracts(obs) if "contracts" not in disabled else []
    try:
        events = observed_plan(case, obs)
    except RetractionError as e:
        return [ServerFailure("retraction", None, str(e))] if "retraction" not in disabled else []
    w = _Walk(case, obs)
    st, layers = w.st, case.model.layers
    shadow: list[dict[int, bytes]] = [{} for _ in range(layers)]
    recs = {f.index: f for f in obs.forwards}
    req_rows = GraphRows(case, obs.target_version, SEQ_LEN_FILL)
    for ev in events:
        req_rows.event(ev)  # the request rows: taken by a prefill, freed by a release
        if isinstance(ev, (Release, Retract)):
            if isinstance(ev, Retract) and fail("retraction", None, retraction(st, ev)):
                return out
            for rid in ev.rids:
                st.tokens.pop(rid, None)
                if isinstance(ev, Release):
                    w.bound.leave(rid, rid in ev.aborted)
            if isinstance(ev, Retract):
                w.bound.retracted()
            continue
        rec, tf = recs.get(ev.index), w.trees.get(ev.index)
        if (rec is None or tf is None) and (obs.out_of_scope or obs.error):
            break  # the run stopped: judge what ran
        if rec is None or tf is None:
            fail("alloc_count", ev.index, alloc_count(ev, None))
            return out
        fail("exec_path", ev.index, exec_path(ev, rec, ev.mode))
        bucket = graph_bucket(case, ev.mode, len(ev.rids), graphs)
        fail("exec_path", ev.index, exec_path(ev, rec, ev.mode, bucket, graphs=True))
        bad = alloc_count(ev, rec)
        if bad:
            fail("alloc_count", ev.index, bad)
            return out
        if fail("tree_leak", ev.index, w.tree_leak(tf)):
            return out + raised
        fail("prefix_hit", ev.index, w.prefix_hit(ev))
        if fail("prefix_reads", ev.index, w.prefix_reads(ev, rec, tf, "before")):
            return out + raised  # what follows a bad read is its consequence
        if fail("allocation", ev.index, allocation(st, ev, rec.alloc)):
            return out + raised
        st.take(ev, rec.alloc)
        w.prov.take(ev, rec.alloc)
        want = [s for _, s in rec.alloc]
        pred = req_rows.replay(st, ev, rec.alloc, bucket if rec.graph else None)
        fail("graph_fill", ev.index, graph_fill(case, st, ev, rec, bucket, pred))
        each = want + [0] * ((bucket or 0) - len(want)) if rec.exec == "graph" else want
        fail("write_targets", ev.index, write_targets(ev, rec, layers, [each] * layers))
        fail("batch_shape", ev.index, batch_shape(case, st, ev, rec))
        if obs.dispatch:  # the release's model runner dispatched the forwards
            fail("model_dispatch", ev.index, forward_dispatch(
                ev, rec, obs.dispatch.get(ev.index), ev.mode, bucket, None))
        if rec.mapping:
            fail("window_reads", ev.index, window_reads(st, ev, rec))
        if fail("prefix_reads", ev.index, w.prefix_reads(ev, rec, tf, "after")):
            return out + raised
        if ev.mode == "EXTEND":
            w.bound.after_extend(ev)
        for layer in range(layers):
            for slot, row in zip(want, rows(case, ev.index, layer, len(want))):
                shadow[layer][slot] = row
    if obs.error is not None:
        return out + raised
    if obs.out_of_scope is None:
        fail("tree_leak", None, w.tree_leak())
    if "pool_bytes" not in disabled:
        out += pool_bytes(case, obs, shadow)
    return out
