"""Window eviction and the cache flush as the release's server makes them (imports SGLang).

* :class:`ReleaseRows`: the release's ``ReqToTokenPool`` (where the scheduler's eviction reads
  its range), a row per request from ``alloc_rows`` at its first eviction, ``free_rows`` at its
  end; contents written from the request's slots before each eviction (modelled).
* :func:`evict_segment` (``features.SEGMENT_EVICT``, 0.5.22+): ``_swa_eviction_trigger``
  (interval 1), then ``free_swa_out_of_window_slots`` (threshold ``pre_len - window``; a prefix
  shared with another live request as ``cache_protected_len``) in the allocator's free group.
  0.5.12 evicts with ``free_swa`` (:mod:`.allocator`), as its ``_evict_swa``.
* :func:`flush`: ``flush_cache`` on a stand-in scheduler over the release's pools: refused
  while a request runs, else tree cache (none), request table and allocator reset; without an
  importable ``Scheduler`` (0.5.12 needs ``sgl_kernel``) the same order with the idle rule modelled.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import torch

from swafuzz.targets.sglang import features
from swafuzz.targets.sharing import held_elsewhere


class ReleaseRows:
    """The release's ``ReqToTokenPool`` with one row per evicted live request."""

    def __init__(self, rows: int, max_tokens: int, device):
        pool_cls = features.first_module("sglang.srt.mem_cache.memory_pool").ReqToTokenPool
        self.pool = pool_cls(size=rows, max_context_len=max_tokens, device=str(device),
                             enable_memory_saver=False)
        self.row: dict[int, int] = {}

    def write(self, rid: int, toks: list[int]) -> int:
        """The request's row (taken on first use) holding ``toks``."""
        if rid not in self.row:
            got = self.pool.alloc_rows(1)
            if not got:
                raise RuntimeError(f"request {rid}: the release's ReqToTokenPool has no free row")
            self.row[rid] = got[0]
        r = self.row[rid]
        if toks:
            self.pool.write((r, slice(0, len(toks))),
                            torch.tensor(toks, dtype=torch.int32, device=self.pool.device))
        return r

    def release(self, rid: int) -> None:
        """A finished request gives its row back (``free_rows``)."""
        if rid in self.row:
            self.pool.free_rows([self.row.pop(rid)])


def protected_len(tokens: dict[int, list[int]], rid: int, page_size: int) -> int:
    """How many leading tokens of ``rid`` lie on pages another live request holds: the prefix
    the radix tree owns (``cache_protected_len``). Sharing is always a leading run of whole
    pages (a prefix admit's ``prefix_len`` is a multiple of P)."""
    shared = held_elsewhere(tokens, rid, page_size)
    toks = tokens[rid]
    n = 0
    while n < len(toks) and toks[n] // page_size in shared:
        n += 1
    if any(f // page_size in shared for f in toks[n:]) or n % page_size:
        raise RuntimeError(f"request {rid}: its pages held by other requests are not a leading "
                           f"run of whole pages ({n} leading tokens)")
    return n


def evict_segment(alloc, rows: ReleaseRows, rid: int, window: int) -> int:
    """The release's sliding-window eviction of request ``rid`` (module docstring); returns the
    frontier the release recorded (``ReqKvInfo``'s SWA cursor)."""
    toks = alloc.tokens[rid]
    P = alloc.page_size
    swa = features.common_mod.ComponentType.SWA
    kv = features.ReqKvInfo(req_pool_idx=rows.write(rid, toks),
                            cache_protected_len=protected_len(alloc.tokens, rid, P))
    kv.set_evicted_seqlen(swa, alloc.evicted[rid])
    # the scheduler evicts at a decode whose new token is not yet written: seqlen - 1 tokens
    req = SimpleNamespace(kv=kv, seqlen=len(toks) + 1)
    trigger = features.EVICTION_TRIGGER
    if trigger is not None and not trigger(SimpleNamespace(forward_iter=0), window, 1)(req):
        return kv.get_evicted_seqlen(swa)
    alloc.real.free_group_begin()
    try:
        features.common_mod.free_swa_out_of_window_slots(
            req, len(toks), sliding_window_size=window, page_size=P,
            req_to_token_pool=rows.pool, token_to_kv_pool_allocator=alloc.real,
            supports_prefix_sharing=False, retain_floor=None, eviction_interval=1)
    finally:
        alloc.real.free_group_end()
    return kv.get_evicted_seqlen(swa)


def _scheduler_flush():
    """The release's ``Scheduler.flush_cache``, or None where the scheduler does not import."""
    try:
        mod = features.first_module("sglang.srt.managers.scheduler")
    except ImportError:  # 0.5.12: the scheduler's imports need sgl_kernel (CUDA)
        return None
    return getattr(getattr(mod, "Scheduler", None), "flush_cache", None)


_FLUSH: list = []


def release_flush():
    """The release's ``Scheduler.flush_cache`` (looked up once), or None where the scheduler
    does not import here (0.5.12: the idle rule is then modelled)."""
    if not _FLUSH:
        _FLUSH.append(_scheduler_flush())
    return _FLUSH[0]


def flush(alloc, rows: ReleaseRows | None) -> bool:
    """The cache flush (module docstring): True when it ran, False when refused (a request is
    running; nothing changed)."""
    running = [SimpleNamespace(rid=r) for r in sorted(alloc.tokens)]
    nothing = SimpleNamespace(reset=lambda: None, clear=lambda: None,
                              reset_metrics=lambda: None, is_stats_logging_rank=False)
    req_pool = rows.pool if rows is not None else SimpleNamespace(
        clear=lambda: None, reset_aux_cache_allocator=lambda: None)
    entry = release_flush()
    if entry is not None:
        sched = SimpleNamespace(
            is_fully_idle=lambda ignore_waiting=False: not running, _engine_paused=False,
            waiting_queue=[], running_batch=SimpleNamespace(reqs=running),
            cur_batch=None, cur_batch_for_debug=None, last_batch=None, tree_cache=nothing,
            req_to_token_pool=req_pool, token_to_kv_pool_allocator=alloc.real,
            grammar_manager=nothing, metrics_reporter=nothing, reset_metrics=lambda: None,
            draft_worker=None)
        quiet = logging.root.manager.disable
        logging.disable(logging.WARNING)  # its refusal logs a warning: the Case expects it
        try:
            ok = bool(entry(sched, empty_cache=False))
        finally:
            logging.disable(quiet)
    else:  # modelled idle rule, the release's pools cleared in the scheduler's order
        ok = not running
        if ok:
            req_pool.clear()
            alloc.real.clear()
    if ok and rows is not None:
        rows.row.clear()
    return ok
