"""The radix cache at server level (the ``sglang`` part's slot ``server_tree``; imports
SGLang): a Case with ``disable_radix_cache`` false runs the server-level pipeline with the
release's tree cache sharing prefixes, driven as its scheduler drives it.

* a waiting request is matched against the tree each time the adder is offered it (the
  release's ``Req.init_next_round_input(tree_cache)``, i.e. ``match_kv_cache`` /
  ``match_prefix``); the tokens the match covers are the Case's prefix-cache hit (observed,
  ``ServerObs.tree["hits"]``) and the EXTEND computes from there;
* the adder locks the matched node when it admits the request (``tree_cache.lock``), and
  counts the tree's evictable tokens as free (the release's allocation evicts the tree under
  memory pressure: ``evict_to_free_tokens`` -> ``evict_for_alloc`` / ``evict``);
* after an EXTEND, each request that runs on publishes its computed prompt
  (``checkpoint_kv_cache``, the release's ``cache_unfinished_req``: insert over an existing
  path, tombstone recovery, lock moved to the new node); a chunk is stashed the same way;
* a request that finishes leaves through ``release_kv_cache(checkpoint=True)`` (the release's
  ``cache_finished_req``), an aborted one with ``checkpoint=False``;
* each eviction of the tree that freed anything, as the number of forwards run before it
  (``ServerObs.tree["evicts"]``; the release's ``_evict``);
* per forward the allocator's free lists (full and SWA slots, duplicates kept) before its step's
  allocation and after the forward, and every live request's ``req_to_token`` row, are recorded; after the run the whole tree is evicted through
  the release's ``evict`` and the free lists recorded again (``ServerObs.tree``).
"""

from __future__ import annotations

from swafuzz.server.observation import ServerObs
from swafuzz.server.timeline import Timeline
from swafuzz.targets.sglang.environ import environ
from swafuzz.targets.sglang.pipeline import seams
from swafuzz.targets.sglang.pipeline.steps import FINISH_ABORT, FINISH_LENGTH, make_req
from swafuzz.targets.sglang.real import TARGET_VERSION

from sglang.srt.mem_cache import common  # isort: skip
from sglang.srt.mem_cache.base_prefix_cache import EvictParams  # isort: skip


#: the release's publish after a prefill: ``checkpoint_kv_cache`` (0.5.22 on) or, before it,
#: ``maybe_cache_unfinished_req`` (the tree's ``cache_unfinished_req``)
PUBLISH = getattr(common, "checkpoint_kv_cache", None) or getattr(
    common, "maybe_cache_unfinished_req", None)
#: release_kv_cache's keyword for keeping what the tree can key: ``checkpoint`` (0.5.22 on) or
#: ``is_insert`` (before)
KEEP = "checkpoint" if seams.RELEASE_CHECKPOINT else "is_insert"


def lock(tree, req) -> None:
    """The adder's lock of a matched request's node: ``tree.lock`` (0.5.22 on, the handle kept
    as ``req.lock``) or ``inc_lock_ref`` with its receipt kept as ``req.lock_receipt`` (before:
    what the release's ``unpin`` replays)."""
    if hasattr(tree, "lock"):
        req.lock = tree.lock(req.last_node)
    else:
        req.lock_receipt = tree.inc_lock_ref(req.last_node).to_dec_params()


def leave(req, tree, keep: bool) -> None:
    """The release's ``release_kv_cache`` for a leaving request; ``keep``: the tree keeps what
    it can key (a finished request), not for an aborted one."""
    common.release_kv_cache(req, tree, **{KEEP: keep})


def free_slots(sub, page: int) -> list[int]:
    """The slots one of the release's sub-allocators holds free (its free and staged pages,
    duplicates kept), sorted; page ids expanded to their slots when ``page`` > 1."""
    pages = sub.get_all_free_pages().tolist()
    if page == 1:
        return sorted(int(p) for p in pages)
    return sorted(int(p) * page + o for p in pages for o in range(page))


def free_lists(allocator) -> dict[str, list[int]]:
    """The hybrid allocator's free full and SWA slots."""
    P = allocator.page_size
    return {"full": free_slots(allocator.full_attn_allocator, P),
            "swa": free_slots(allocator.swa_attn_allocator, P)}


def tree_pipeline(base):
    """The server-level pipeline class ``base`` with the radix cache on (module docstring)."""

    class TreePipeline(base):
        def start(self) -> Timeline:
            self.obs = ServerObs(target_version=TARGET_VERSION)
            self.offered: dict[int, int] = {}  # this step's matches: request -> hit
            self.obs.tree = {"hits": {}, "forwards": {}, "evicts": [],
                             "start": free_lists(self.srv.allocator)}
            self.watch_evictions()
            self.tl = Timeline(self.case, self.retract, self.admit, self.hit)
            return self.tl

        def watch_evictions(self) -> None:
            """Record, as the forwards run before it, each eviction of the tree (the release's
            ``_evict``, under ``evict`` and ``evict_for_alloc``) that freed anything: the
            release's decision, observed like retractions (the hits after it are not bounded
            below, ``server_oracle.prefix_hit``)."""
            tree = self.srv.tree_cache
            real = getattr(tree, "_evict", None)
            if real is None:  # not observed: the oracle bounds no hit
                del self.obs.tree["evicts"]
                return

            def _evict(*args, **kw):
                res = real(*args, **kw)
                if any(getattr(res, f, 1) for f in ("num_tokens_evicted",
                                                    "swa_num_tokens_evicted")):
                    self.obs.tree["evicts"].append(len(self.obs.forwards))
                return res

            tree._evict = _evict

        # -- the scheduler's prefix match and the adder ---------------------------------------
        def hit(self, t: int, rid: int) -> int:
            """The release's match of a waiting request (new, or back after a retraction)."""
            req = self.reqs.get(rid)
            if req is None:
                req = self.reqs[rid] = self.new_req(rid)
            req.init_next_round_input(self.srv.tree_cache)
            m = seams.prefix_len(req)
            self.offered[rid] = m
            if m:
                self.obs.tree["hits"].setdefault(t, {})[rid] = m
            return m

        def new_req(self, rid: int):
            return make_req(self.case, rid)

        def request(self, rid: int, start: int):
            """An admitted request: a matched one is locked on its node (the adder's
            ``tree_cache.lock``); the chunked one goes on with its next chunk."""
            if rid not in self.offered:
                return super().request(rid, start)
            req = self.reqs[rid]
            if seams.prefix_len(req) != start:
                raise RuntimeError(f"request {rid}: matched {seams.prefix_len(req)} tokens, "
                                   f"the plan starts at {start}")
            lock(self.srv.tree_cache, req)
            return req

        def fits(self, prefill) -> bool:
            """The adder's budget (modelled): as the base pipeline's, with the tree's
            evictable tokens counted free, less the matched prefixes the admission locks."""
            rids, spans = prefill
            s, P = self.srv, self.case.config.page_size
            need = sum(n for _, n in spans) + len(rids) * P
            locked = sum(start for _, (start, _) in zip(rids, spans))
            a, tree = s.allocator, s.tree_cache
            full = a.full_available_size() + tree.full_evictable_size() - locked
            swa = a.swa_available_size() + tree.swa_evictable_size() - locked
            return min(full, swa) >= need

        def batches(self, t: int):
            """The step's batch, the free lists taken first (after the leaving requests, before
            this step's allocation)."""
            self.offered = {}
            self.before = free_lists(self.srv.allocator)
            return super().batches(t)

        # -- after the forward: publish, release ----------------------------------------------
        def forward(self, fwd, batch):
            rec = super().forward(fwd, batch)
            table = self.srv.req_to_token_pool.req_to_token
            rows = {}
            for rid, req in self.reqs.items():
                idx = getattr(getattr(req, "kv", req), "req_pool_idx", None)
                if idx is None:
                    continue
                n = len(req.origin_input_ids) + len(req.output_ids)  # at most what it holds
                if rid in fwd.rids:  # the batch's requests: their length after this forward
                    b = fwd.rids.index(rid)
                    n = fwd.spans[b][0] + fwd.spans[b][1]
                rows[rid] = table[int(idx), :n].tolist()
            self.obs.tree["forwards"][fwd.index] = {"rows": rows, "before": self.before,
                                                    **free_lists(self.srv.allocator)}
            return rec

        def after_forward(self, fwd, batch) -> None:
            """The base pipeline's (outputs, the chunk stashed), then each request of an
            EXTEND that runs on publishes its prompt (the release's prefill result path)."""
            reqs = self.reqs
            chunked = {rid for rid, (start, n) in zip(fwd.rids, fwd.spans)
                       if start + n < len(reqs[rid].origin_input_ids) + len(reqs[rid].output_ids)}
            super().after_forward(fwd, batch)
            if fwd.mode != "EXTEND":
                return
            for rid in fwd.rids:
                req = reqs[rid]
                if rid in chunked or len(req.output_ids) >= self.case.requests[rid].max_new_tokens:
                    continue  # a chunk (stashed), or finished (cached when it leaves)
                PUBLISH(req, self.srv.tree_cache)

        def release(self, ev) -> None:
            tree = self.srv.tree_cache
            for rid in ev.rids:
                req = self.reqs.pop(rid)
                aborted = rid in ev.aborted
                req.finished_reason = (FINISH_ABORT() if aborted
                                       else FINISH_LENGTH(len(req.output_ids)))
                leave(req, tree, not aborted)
            if self.running is not None:
                self.running.filter_batch()

        def finish(self) -> ServerObs:
            """After a whole run: the tree evicted through the release's ``evict``, then the
            free lists (every slot should be back)."""
            if self.obs.error is None and self.obs.out_of_scope is None and self.tl.done():
                a = self.srv.allocator
                try:
                    m = self.case.model
                    self.srv.tree_cache.evict(EvictParams(num_tokens=m.full_tokens,
                                                          swa_num_tokens=m.swa_tokens))
                    self.obs.tree["end"] = free_lists(a)
                except Exception as e:  # noqa: BLE001 - the release's evict raised
                    self.failed(e)
            return super().finish()

    return TreePipeline


#: the environment variable the release's unified cache reads its tree core from
TREE_CORE_ENV = "SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND"


def run(case, impl: str, executor, pipeline_cls) -> ServerObs:
    """A radix-cache Case through ``pipeline_cls`` with the tree on (the ``sglang`` part's
    slot ``server_tree``), its tree core the Case's ``model.tree_core``."""
    with environ({TREE_CORE_ENV: case.model.tree_core}):
        return tree_pipeline(pipeline_cls)(case, impl, executor).run()
