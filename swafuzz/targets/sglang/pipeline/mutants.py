"""Server-level mutants: changes in the release's own pipeline code, patched at runtime while a
server-level Case runs (imports SGLang). Component-level Cases never run these hops (the
component engine builds no ScheduleBatch), so only server-level Cases can kill them. Every
server mutant is declared in its feature's mutants module (``mutant(level="server")``, the
core's in :mod:`swafuzz.features.dense.server_mutants`); :func:`patched` opens one by name.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Iterator

from sglang.srt.managers import schedule_batch as sb
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.mem_cache import common
from sglang.srt.mem_cache.memory_pool import ReqToTokenPool

from swafuzz.targets.mutants import load_server
from swafuzz.targets.sglang.pipeline import seams


def decode_stale_out_cache_loc():
    """Spec §9.3 (equal-length stale cache): ``ScheduleBatch.prepare_for_decode`` allocates
    the step's slots but the batch keeps the previous forward's ``out_cache_loc`` when it has
    as many rows, so the stores write into the previous batch's slots."""
    real = ScheduleBatch.prepare_for_decode

    def prepare_for_decode(self):
        old = self.out_cache_loc
        real(self)
        if old is not None and old.numel() == self.out_cache_loc.numel():
            self.out_cache_loc = old

    return seams.set_attr(ScheduleBatch, "prepare_for_decode", prepare_for_decode)


def evict_frontier_one_ahead():
    """Spec §9.15 (eviction frontier overtaking the window): the scheduler's SWA eviction
    (``ScheduleBatch._evict_swa``) passes the tree a length one token longer than the request's,
    so the oldest token still inside the sliding window loses its SWA slot, which the allocator
    may hand to a new token while the batch still attends to it."""
    real = ScheduleBatch._evict_swa
    # a release that keeps one page more than the window (0.5.12: its frontier is
    # pre_len - window - page_size) is pushed that page further, so the frontier still
    # overtakes the window by one token
    keeps_page = "sliding_window_size - self.tree_cache.page_size" in inspect.getsource(real)

    def _evict_swa(self, req, pre_len, **kw):
        extra = self.tree_cache.page_size if keeps_page else 0
        return real(self, req, pre_len + 2 + extra, **kw)

    return seams.set_attr(ScheduleBatch, "_evict_swa", _evict_swa)


def decode_leaks_a_slot():
    """Spec §9 (a slot leaked): the scheduler's decode allocation (``alloc_for_decode``, as
    ``ScheduleBatch.prepare_for_decode`` calls it) takes one slot more than the batch's rows
    from the allocator and never frees it (page size 1: the release's ``alloc`` path)."""
    real = sb.alloc_for_decode

    def alloc_for_decode(batch, token_per_req):
        out = real(batch, token_per_req)
        if batch.token_to_kv_pool_allocator.page_size == 1:
            batch.token_to_kv_pool_allocator.alloc(1)
        return out

    return seams.set_attr(sb, "alloc_for_decode", alloc_for_decode)


def swa_offset_rotated():
    """Spec §4 (an SWA slot keeps its full slot's page offset): the hybrid allocator's
    ``set_full_to_swa_mapping`` maps each full slot to the next offset of its SWA page (page
    size > 1), the page itself unchanged."""
    from sglang.srt.mem_cache.allocator.swa import SWATokenToKVPoolAllocator as cls
    real = cls.set_full_to_swa_mapping

    def set_mapping(self, full_indices, swa_indices):
        P = self.page_size
        if P > 1:
            swa_indices = swa_indices - swa_indices % P + (swa_indices + 1) % P
        return real(self, full_indices, swa_indices)

    return seams.set_attr(cls, "set_full_to_swa_mapping", set_mapping)


def graph_largest_bucket_eager():
    """Spec §5.1 (a DECODE batch runs the smallest captured bucket holding it): the decode graph
    runner's can-run decision is off by one at the top, a batch of the largest captured size
    runs eagerly (``bs < max_bs``)."""
    if seams.DECODE_RUNNER_MOD is not None:
        cls, name = seams.DECODE_RUNNER_MOD.DecodeCudaGraphRunner, "can_run_graph"
    else:  # 0.5.12's runner
        from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner as cls
        name = "can_run"
    real = getattr(cls, name)

    def decide(self, forward_batch, *args, **kwargs):
        return forward_batch.batch_size < self.max_bs and real(self, forward_batch, *args,
                                                                **kwargs)

    return seams.set_attr(cls, name, decide)


@contextlib.contextmanager
def retract_keeps_none() -> Iterator[None]:
    """The release's ``ScheduleBatch.retract_decode`` without its guard "Always keep at least
    one request": its loop's first pop takes the last running request too, the batch is empty
    and the request is prefilled again. Reached as under the scheduler's retraction test mode
    (``SGLANG_TEST_RETRACT``, interval 1): the scheduler's gate (``check_decode_mem()``, no
    selection) refuses every DECODE; the retraction loop's own checks are the release's."""
    real_gate, real = ScheduleBatch.check_decode_mem, ScheduleBatch.retract_decode
    takes_args = "server_args" in inspect.signature(ScheduleBatch.release_req).parameters

    def check_decode_mem(self, selected_indices=None, *args, **kwargs):
        return selected_indices is not None and real_gate(self, selected_indices, *args, **kwargs)

    def retract_decode(self, *args):
        if len(self.reqs) != 1:  # the guard's only case under a gate that fits the rest
            return real(self, *args)
        req = self.reqs[0]
        self.release_req(0, 0, *args[:1]) if takes_args else self.release_req(0, 0)
        self.filter_batch(keep_indices=[])
        return [req], 1.0, []

    with seams.set_attr(ScheduleBatch, "check_decode_mem", check_decode_mem), \
            seams.set_attr(ScheduleBatch, "retract_decode", retract_decode):
        yield


def patched(name: str | None):
    """The patch of server mutant ``name`` (None: nothing patched); only its module imported
    (it may import SGLang)."""
    if name is None:
        return contextlib.nullcontext()
    known = load_server()
    if name not in known:
        raise KeyError(f"server mutant {name!r} (known: {', '.join(known)})")
    return known[name].patched()


def req_rows_from_zero():
    """Spec additions §2.1 (``ReqToTokenPool``'s row 0 is the padding row a padded graph row's
    ``req_pool_indices`` 0 names; free rows start at 1): the pool hands out rows ``0..size-1``,
    so a live request may own the padding row and every request's row is one lower."""
    real = ReqToTokenPool.__init__

    def __init__(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.free_slots = list(range(0, self.size))

    return seams.set_attr(ReqToTokenPool, "__init__", __init__)


def abort_mid_chunk_not_released():
    """The chunked-prefill leak class (PR #1858 'Fix memory leak for chunked prefill 2', PR
    #10871's request row left allocated; issue #38981, an abort while a prompt is prefilled
    on the hybrid SWA cache's free path): the release's ``release_kv_cache`` returns at once
    for a request whose prompt is still being chunked, so an abort mid-chunk leaks the chunks'
    KV pages (full and SWA) and its ``ReqToTokenPool`` row."""
    real = common.release_kv_cache

    def release_kv_cache(req, tree_cache, *args, **kwargs):
        end = seams.fill_end(req)
        if not req.output_ids and end < len(req.origin_input_ids):  # its prompt is chunked
            return None
        return real(req, tree_cache, *args, **kwargs)

    return seams.set_attr(common, "release_kv_cache", release_kv_cache)
