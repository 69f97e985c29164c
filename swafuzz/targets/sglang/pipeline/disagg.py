"""The decode side of prefill/decode disaggregation taking over a transferred prompt (imports
SGLang): the release's own ``DecodePreallocQueue._pre_alloc`` (0.5.23
``disaggregation/decode.py``: its request row, ``_swa_tail_len``, ``alloc_for_decode_prealloc``
-> ``SWATokenToKVPoolAllocator.alloc_extend_swa_tail`` with the head's mapping reset, the
``req_to_token`` write; 0.5.12's equivalent, reading its server args through the scheduler)
on a server-level run's allocator, request table and tree cache.

Modelled: the queue is built without its constructor (no transfer backend, no bootstrap: the
KV transfer itself needs a second server and RDMA / a transfer engine, not run on CPU) and holds
what ``_pre_alloc`` reads; the scheduler stand-in holds the sliding window, no HiSparse and the
hybrid-SWA flag; decode-side radix cache off (``disaggregation_decode_enable_radix_cache``
false). The request arrives as the prefill side hands it over: its prompt and first output
token.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from swafuzz.targets.sglang.pipeline import seams
from swafuzz.targets.sglang.pipeline.steps import make_req, output_id

from sglang.srt.disaggregation import decode as disagg_decode  # isort: skip


def prealloc_queue(srv):
    """A constructor-less ``DecodePreallocQueue`` over server ``srv``'s pieces."""
    q = object.__new__(disagg_decode.DecodePreallocQueue)
    q.req_to_token_pool = srv.req_to_token_pool
    q.token_to_kv_pool_allocator = srv.allocator
    q.token_to_kv_pool = srv.engine.target_pool.real
    q.tree_cache = srv.tree_cache
    q.scheduler = SimpleNamespace(sliding_window_size=srv.case.model.sliding_window,
                                  enable_hisparse=False, server_args=srv.server_args,
                                  tp_worker=SimpleNamespace(is_hybrid_swa=True))
    return q


def takeover(pipeline, rid: int) -> dict:
    """Request ``rid`` of the pipeline's Case (one its plan has not admitted) taken over from a prefill server: the release's
    pre-allocation; what it did as plain data (``req_pool_idx``, the full slots ``loc``, the
    mapping of each before and after, the request's ``row`` of ``req_to_token`` over the
    filled length, the free ``[full, SWA]`` tokens before and after, ``tail_swa``: whether
    the release took its SWA tail path)."""
    srv = pipeline.srv
    a = srv.allocator
    q = prealloc_queue(srv)
    req = make_req(srv.case, rid)
    req.output_ids = seams.token_ids([output_id(rid, 0)])  # the prefill side's first token
    before = [int(a.full_available_size()), int(a.swa_available_size())]
    mapping = a.full_to_swa_index_mapping
    snapshot = mapping.clone()
    loc = q._pre_alloc(req).to(torch.int64)
    # on the request's kv info where the release keeps it there, else on Req (0.5.12: no kv
    # info; 0.5.18 .. 0.5.21: a kv info without the row)
    idx = getattr(getattr(req, "kv", None), "req_pool_idx", None)
    idx = req.req_pool_idx if idx is None else idx
    pipeline.tap.take()  # its allocations are this record's, not a forward's
    return {"req_pool_idx": int(idx), "loc": loc.tolist(),
            "mapping_before": snapshot[loc].tolist(), "mapping": mapping[loc].tolist(),
            "row": srv.req_to_token_pool.req_to_token[idx, :loc.numel()].tolist(),
            "free_before": before,
            "free_after": [int(a.full_available_size()), int(a.swa_available_size())],
            "tail_swa": bool(q._uses_swa_tail_prealloc())}


def tail_short_by_a_page():
    """Spec §9.15 (a window frontier inside the window leaves reads of SWA slot 0), in the
    release's ``DecodePreallocQueue._swa_tail_len``: the window's start is rounded up to a page
    instead of down, so the SWA tail misses up to a page of the window's oldest tokens."""
    real = disagg_decode.DecodePreallocQueue._swa_tail_len

    def _swa_tail_len(self, seq_len: int) -> int:
        n = real(self, seq_len)
        ps = self.token_to_kv_pool_allocator.page_size
        return n - ps if n > ps else n

    return seams.set_attr(disagg_decode.DecodePreallocQueue, "_swa_tail_len", _swa_tail_len)
