"""Server mutants of the release's speculative-decoding code (imports SGLang), patched while a
speculative server-level Case runs; each is declared with its source in
:mod:`swafuzz.features.spec_decode.server_mutants`."""

from __future__ import annotations

import contextlib

import torch
from sglang.srt.managers.scheduler_components import batch_result_processor as brp
from sglang.srt.mem_cache import common
from sglang.srt.speculative import eagle_utils, eagle_worker_common

from swafuzz.targets.sglang.pipeline import spec
from swafuzz.targets.sglang.pipeline.seams import set_attr


def overalloc_free_short():
    """The release's ``_release_overallocated_kv_indices`` frees the reserved tail one slot
    short: the last reserved slot of a finishing request leaks (spec v2's over-allocation,
    PR #22373's free path)."""
    real = common._release_overallocated_kv_indices

    def free(req, start_p, end_p, tree_cache):
        return real(req, start_p, end_p - 1 if end_p > start_p else end_p, tree_cache)
    return set_attr(common, "_release_overallocated_kv_indices", free)


def commit_one_more():
    """``_resolve_spec_v2_tokens`` commits one token more than the verify accepted (the
    committed length running ahead of the accepted KV: the overlap lag, spec §9.3 family)."""
    cls = brp.SchedulerBatchResultProcessor
    real = cls._resolve_spec_v2_tokens

    def resolve(self, result, batch):
        out = real(self, result, batch)
        for req in batch.reqs:
            req.kv.kv_committed_len += 1
        return out
    return set_attr(cls, "_resolve_spec_v2_tokens", resolve)


def draft_extend_rejected_to_dummy():
    """``prepare_for_draft_extend`` steers each request's rows past its accepted tokens to
    the dummy slot 0 (spec §9: draft tokens written to the dummy slot)."""
    real = eagle_worker_common.prepare_for_draft_extend

    def prep(draft_extend_input, batch, predict, num_draft_tokens, *a, **kw):
        fb = real(draft_extend_input, batch, predict, num_draft_tokens, *a, **kw)
        acc = draft_extend_input.num_accept_tokens.tolist()
        loc = fb.out_cache_loc.clone()
        for b, n in enumerate(acc):
            loc[b * num_draft_tokens + n:(b + 1) * num_draft_tokens] = 0
        fb.out_cache_loc = loc
        return fb
    return set_attr(eagle_worker_common, "prepare_for_draft_extend", prep)


def reserve_single():
    """``eagle_prepare_for_decode`` reserves one decode's tokens, not the double buffer
    (``get_alloc_reserve_per_decode`` without its 2x, which absorbs the committed-length lag
    under overlap)."""
    from sglang.srt.mem_cache.allocation_sizing import get_alloc_len_per_decode
    return set_attr(eagle_utils, "get_alloc_reserve_per_decode", get_alloc_len_per_decode)


def draft_locs_one_ahead():
    """``prepare_for_draft`` gathers the draft-write locations one position past the committed
    length (``assign_draft_cache_locs_contiguous`` from ``seq_lens + 1``): each draft step
    writes its token's KV into the next position's slot (spec §9.3 family, stale/shifted
    write targets)."""
    name = "assign_draft_cache_locs_contiguous_func"
    if not hasattr(eagle_worker_common, name):  # 0.5.22 launches the kernel itself
        return set_attr(eagle_worker_common, "assign_draft_cache_locs_contiguous",
                    _ShiftedLaunch(eagle_worker_common.assign_draft_cache_locs_contiguous))
    real = getattr(eagle_worker_common, name)

    def assign(req_pool_indices, req_to_token, seq_lens, *a, **kw):
        return real(req_pool_indices, req_to_token, seq_lens + 1, *a, **kw)
    return set_attr(eagle_worker_common, name, assign)


class _ShiftedLaunch:
    """A Triton kernel whose ``kernel[grid](indices, table, seq_lens, ...)`` launch gets
    ``seq_lens + 1``."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        launch = self.kernel[grid]
        return lambda idx, table, seq_lens, *a, **kw: launch(idx, table, seq_lens + 1, *a, **kw)


def verify_keeps_previous_loc():
    """``eagle_prepare_for_verify`` leaves the previous iteration's ``out_cache_loc`` in the
    verify batch when it has as many rows (spec §9.3, equal-length stale cache)."""
    real = eagle_utils.eagle_prepare_for_verify
    last: dict = {}

    def prep(verify_input, req_to_token_pool, batch, target_worker):
        fb, graph = real(verify_input, req_to_token_pool, batch, target_worker)
        old = last.get("loc")
        last["loc"] = fb.out_cache_loc
        if old is not None and old.numel() == fb.out_cache_loc.numel():
            fb.out_cache_loc = old
        return fb, graph
    return set_attr(eagle_utils, "eagle_prepare_for_verify", prep)


def accept_frees_rejected():
    """After the commit, the rejected draft tokens' slots of the verify window are freed as
    the v1 EAGLE accept did (``free(out_cache_loc[~accept_mask])``), while spec v2 keeps them
    reserved in ``req_to_token`` and frees them again with the request (freed twice)."""
    cls = brp.SchedulerBatchResultProcessor
    real = cls._resolve_spec_v2_tokens

    def resolve(self, result, batch):
        before = [int(r.kv.kv_committed_len) for r in batch.reqs]
        out = real(self, result, batch)
        n = int(result.speculative_num_draft_tokens)
        table = batch.req_to_token_pool.req_to_token
        for req, pre, idx in zip(batch.reqs, before, batch.req_pool_indices.tolist()):
            lo = int(req.kv.kv_committed_len)
            if lo < pre + n:
                batch.token_to_kv_pool_allocator.free(table[idx, lo:pre + n].to(torch.int64))
        return out
    return set_attr(cls, "_resolve_spec_v2_tokens", resolve)


@contextlib.contextmanager
def per_step_locs_unpermuted():
    """``per_step_draft_out_cache_loc`` slices the multi-step draft buffer step-major without
    its ``(batch, topk, steps) -> (steps, batch, topk)`` permute: with two requests or more a
    draft decode step writes other requests' and steps' slots."""
    def per_step(out_cache_loc, batch_size, topk, num_steps):
        return out_cache_loc.reshape(num_steps, -1)

    with set_attr(eagle_utils, "per_step_draft_out_cache_loc", per_step), \
            set_attr(spec, "per_step_draft_out_cache_loc", per_step):
        yield
