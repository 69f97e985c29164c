"""The radix cache's server mutants as patches of the release's own code (imports SGLang; the
declarations and sources: :mod:`.server_mutants`). Each wraps the release's function and puts
one upstream bug back; nothing of it is copied."""

from __future__ import annotations

import contextlib
from typing import Iterator

from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.environ import set_attr

from sglang.srt.mem_cache import common  # isort: skip
from sglang.srt.mem_cache.unified_cache.components import swa as swa_component  # isort: skip


@contextlib.contextmanager
def lock_kept() -> Iterator[None]:
    """``release_kv_cache`` with the request's lock forgotten before it runs: the release
    unlocks nothing, so the request's path stays locked (never evictable). 0.5.22 on: the
    request's ``lock`` handle dropped; before: the tree's ``_dec_req_lock`` (which replays the
    request's lock receipt: 0.5.21's ``unpin``, 0.5.20's ``cache_finished_req``) does nothing
    while the request leaves."""
    real = common.release_kv_cache

    def release_kv_cache(req, tree_cache, *args, **kw):
        if "checkpoint" in kw:
            req.lock = None
            return real(req, tree_cache, *args, **kw)
        with set_attr(tree_cache, "_dec_req_lock", lambda r, **kw: None):
            return real(req, tree_cache, *args, **kw)

    with set_attr(common, "release_kv_cache", release_kv_cache):
        yield


@contextlib.contextmanager
def insert_drops_swa_boundary() -> Iterator[None]:
    """The SWA component prepares an insert without the request's SWA eviction boundary
    (reset to 0 after the release set it), so an insert caches freed SWA pages as live."""
    cls = swa_component.SWAComponent
    prepare, free = cls.prepare_for_caching_req, cls.free_out_of_window_slots

    def prepare_for_caching_req(self, req, insert_params, token_ids_len, is_finished):
        out = prepare(self, req, insert_params, token_ids_len, is_finished)
        insert_params.set_evicted_seqlen(self.component_type, 0)
        return out

    def free_out_of_window_slots(self, req, pre_len, insert_params):
        free(self, req, pre_len, insert_params)
        insert_params.set_evicted_seqlen(self.component_type, 0)

    with set_attr(cls, "prepare_for_caching_req", prepare_for_caching_req), \
            set_attr(cls, "free_out_of_window_slots", free_out_of_window_slots):
        yield


def row_not_repointed():
    """The tree's insert of a running request's KV (``checkpoint_into_tree``, 0.5.22 on;
    ``cache_unfinished_req`` before) leaves the request's ``req_to_token`` row on its own slots
    for the tokens the tree already held, although the insert freed those duplicates."""
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache as cls

    def keeping_the_row(real, self, req, n, *args, **kw):  # the row's first n tokens kept
        idx = req.kv.req_pool_idx
        table = self.req_to_token_pool.req_to_token
        before = table[idx, :n].clone()
        real(self, req, *args, **kw)
        table[idx, :n] = before

    if hasattr(cls, "checkpoint_into_tree"):
        real = cls.checkpoint_into_tree

        def checkpoint_into_tree(self, req, *, up_to, **kw):
            keeping_the_row(real, self, req, up_to, up_to=up_to, **kw)

        return set_attr(cls, "checkpoint_into_tree", checkpoint_into_tree)
    unfinished = cls.cache_unfinished_req

    def cache_unfinished_req(self, req, *args, **kw):
        keeping_the_row(unfinished, self, req, len(req.get_fill_ids()), *args, **kw)

    return set_attr(cls, "cache_unfinished_req", cache_unfinished_req)


def chunk_published_whole():
    """A chunk's checkpoint (``UnifiedRadixCache.checkpoint``) keyed on the whole prompt (the
    extend-phase fill) instead of the KV the request has committed: positions not computed yet
    are published to the tree."""
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache as cls
    if not hasattr(cls, "checkpoint"):  # 0.5.20 / 0.5.21: the stash keys the request's fill ids
        raise TargetUnavailable(
            "server mutant chunk_published_whole: this release stashes a chunk through "
            "cache_unfinished_req(chunked=True), keyed on the request's fill ids; the "
            "checkpoint(up_to=...) this mutant widens is 0.5.22+")
    real = cls.checkpoint

    def checkpoint(self, req, *, up_to, **kw):
        return real(self, req, up_to=max(up_to, len(req.origin_input_ids)), **kw)

    return set_attr(cls, "checkpoint", checkpoint)


def reprefill_cap_everywhere():
    """The tree's ``swa_reprefill_tail_tokens`` answers the window for every match, as if each
    reused prefix carried SWA the tree cannot reuse (the unified_kv ring, decoder bounded
    replay): every match stops a window short of the request's tokens."""
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache as cls

    def swa_reprefill_tail_tokens(self, req=None):
        swa = self.components.get(ComponentType.SWA)
        return swa.sliding_window_size if swa is not None else 0

    return set_attr(cls, "swa_reprefill_tail_tokens", swa_reprefill_tail_tokens)


def frontier_unaligned():
    """``free_swa_out_of_window_slots`` keeping ``max(window, page)`` tokens of SWA behind
    ``pre_len`` instead of that many rounded up to whole pages (0.5.22's rule): with a window
    longer than a page and not a multiple of it, a page the key still needs is freed. Put back
    by calling the release's function with ``pre_len`` and the window both raised by the
    rounding, so its rounded threshold lands where 0.5.22's unrounded one did (the
    early-return test ``pre_len - window`` is unchanged)."""
    real = common.free_swa_out_of_window_slots

    def free_swa_out_of_window_slots(req, pre_len, *, sliding_window_size, page_size, **kw):
        keep = max(sliding_window_size, page_size)
        up = -(-keep // page_size) * page_size - keep
        if kw.get("supports_prefix_sharing", True):
            pre_len, sliding_window_size = pre_len + up, sliding_window_size + up
        return real(req, pre_len, sliding_window_size=sliding_window_size,
                    page_size=page_size, **kw)

    return _both(free_swa_out_of_window_slots)


@contextlib.contextmanager
def _both(fn) -> Iterator[None]:  # the module's name and the SWA component's import of it
    with set_attr(common, "free_swa_out_of_window_slots", fn), \
            set_attr(swa_component, "free_swa_out_of_window_slots", fn):
        yield
