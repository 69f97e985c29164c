"""Mutants of the dense path (feature ``dense``: paged SWA pool, eager and graph decode, target
verify, draft extend, multi-step draft, IDLE; spec §2, §4, §5, §9). Each swaps one component class
of :class:`targets.engine.UnifiedEngine` for a subclass overriding one method.
"""

from __future__ import annotations

import torch

from swafuzz.kernels.launch import capturing
from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.backend import DSV4Backend, per_step_draft_out_cache_loc
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardBatch
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import AttnMetadata, CoreAttnMetadata, copy_metadata
from swafuzz.targets.mutants import mutant
from swafuzz.targets.runners import DecodeGraphRunner, DraftExtendGraphRunner
from swafuzz.targets.sglang.zoo import SGLangMutant


class _ZeroDraftExtendBackend(DSV4Backend):
    def out_graph_draft_extend(self, fb, bs, loc, seq_lens):
        md = super().out_graph_draft_extend(fb, bs, None, seq_lens)
        core = md.core_attn_metadata
        core.swa_out_cache_loc = self.translate(core.raw_out_loc)
        return md


@mutant("draft_extend_zeros", ("draft_extend", "episode"), "PR #27091 review (P1), spec §9.1",
        expected=("write_targets", "pool_bytes", "agreement"))
class DraftExtendZeros(UnifiedEngine):
    """Draft-extend bucket metadata built from synthetic zeros, and the resolver trusts its
    stamped ``swa_out_cache_loc``: the draft-extend rows land at the translation of location 0."""

    backend_cls = _ZeroDraftExtendBackend


class _IdleUsesCacheBackend(DSV4Backend):
    def cache_usable(self, cached, fb, n):
        return cached is not None and cached.shape[0] == n


@mutant("idle_uses_cache", ("idle",), "PR #15227 class, spec §9.4",
        expected=("write_targets", "pool_bytes", "write_set", "agreement"))
class IdleUsesCache(UnifiedEngine):
    """The resolver without its IDLE guard: an eager MTP IDLE forward reuses the stale cached
    location of the previous batch when the row counts match."""

    backend_cls = _IdleUsesCacheBackend


class _NoZeroDecodeRunner(DecodeGraphRunner):
    def fill_static_loc(self, live_loc, rows):
        self.static_loc[:live_loc.numel()].copy_(live_loc)


@mutant("pad_rows_not_zeroed", ("decode", "target_verify"), "PR #24743, spec §9.5",
        expected=("write_targets", "write_set", "pool_bytes", "agreement"))
class PadRowsNotZeroed(UnifiedEngine):
    """The static location buffer is not re-zeroed when the raw batch shrinks inside a bucket:
    padded rows write the live slots a larger batch left."""

    decode_runner_cls = _NoZeroDecodeRunner


class _MemoPool(SWAKVPool):
    def _memo_key(self, loc: torch.Tensor):
        return (loc.data_ptr(), loc.numel())

    def translate_loc_from_full_to_swa(self, loc):
        key = self._memo_key(loc)
        if getattr(self, "_cached_loc_key", None) != key:
            self._cached_swa_loc = super().translate_loc_from_full_to_swa(loc)
            self._cached_loc_key = key
        return self._cached_swa_loc


@mutant("memo_data_ptr", ("decode", "episode"), "PR #25824 era, spec §2.7, §9.6",
        expected=("write_targets", "pool_bytes", "agreement"))
class MemoDataPtr(UnifiedEngine):
    """The translation memoised on ``(data_ptr, numel)`` with no invalidation: a reused
    location tensor with new contents gets the old translation."""

    pool_cls = _MemoPool


class _StorageMemoPool(_MemoPool):
    def _memo_key(self, loc):
        return (loc.untyped_storage().data_ptr(), loc.numel())


@mutant("memo_storage_ptr", ("multi_step_draft", "decode"),
        "PR #25824 report (storage pointer collides for views), spec §9.6",
        expected=("write_targets", "pool_bytes", "agreement"))
class MemoStoragePtr(UnifiedEngine):
    """The memo keyed on the storage pointer: equal-length views of one buffer (the per-step
    slices of a multi-step draft) collide and share one translation."""

    pool_cls = _StorageMemoPool


class _LayerCacheBackend(DSV4Backend):
    def get_store_loc(self, layer_id: int, fb: ForwardBatch):
        pool = self.pool
        if layer_id == 0 or getattr(pool, "cached_loc", None) is None:
            pool.cached_loc = self.get_swa_out_cache_loc(fb)
        return pool.cached_loc


@mutant("layer_cache_no_reset", ("draft_extend", "multi_step_draft"),
        "spec §9.7 layer-0 rule, spec §2.8 (0.5.12 keys on start_layer; PR #25889)",
        expected=("write_targets", "pool_bytes", "agreement", "contracts"))
class LayerCacheNoReset(UnifiedEngine):
    """A layer-keyed location cache recomputed at global layer 0 only and never reset: a pool
    whose first storing layer is not 0 (the draft model) keeps its first batch's locations.

    Not 0.5.12's form (it recomputes at the pool's ``start_layer``; its ``register_mapping`` bug,
    PR #25889 / #26079, needs a mapping rebuilt between forwards, which no Case step does, and
    ``--target sglang`` runs that code for real): the variant of the class the scenarios reach."""

    backend_cls = _LayerCacheBackend


class _Int64Backend(DSV4Backend):
    def translate(self, loc):
        return self.pool.mapping[loc]


@mutant("int64_store_locs", ("decode",), "spec §2.2 / §9.8 (int64 translation to int32 kernel)",
        expected=("contracts",), kernel_level=True)
class Int64StoreLocs(UnifiedEngine):
    """The translation without its int32 cast: int64 locations reach the int32 store."""

    backend_cls = _Int64Backend


class _HostBakedBackend(DSV4Backend):
    def translate_in_graph(self, loc):
        if capturing() and getattr(self, "_host_const", None) is not None:
            return self._host_const
        vals = self.translate(loc).tolist()
        self._host_const = torch.tensor(vals, dtype=torch.int32, device=loc.device)
        self.baked["swa_out_cache_loc"] = vals
        return self._host_const


@mutant("host_baked_translation", ("decode",), "PR #38137 class, spec §2.7(e)",
        expected=("capture_freeze", "agreement", "write_targets", "pool_bytes"))
class HostBakedTranslation(UnifiedEngine):
    """The translation computed on the host at capture and baked into the graph as a
    constant: every replay writes the capture batch's slots."""

    backend_cls = _HostBakedBackend


class _MinusOneRunner(DecodeGraphRunner):
    def fill_static_loc(self, live_loc, rows):
        super().fill_static_loc(live_loc, rows)
        self.static_loc[live_loc.numel():rows].fill_(-1)


class _UncheckedStoreBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        self.pool.impl.store_unchecked(cache, loc, rows)


@mutant("negative_loc_wraps", ("decode",), "spec §2.1 sentinel, §9.9",
        expected=("redzones", "contracts", "write_targets"), kernel_level=True)
class NegativeLocWraps(UnifiedEngine):
    """Padded rows at -1 translate through the sentinel and, with the store launched without
    its value contract, write before the buffer."""

    decode_runner_cls = _MinusOneRunner
    backend_cls = _UncheckedStoreBackend


class _Step0Backend(DSV4Backend):
    def select_step_loc(self, fb, loc):
        sliced = super().select_step_loc(fb, loc)
        if sliced is loc:
            return loc
        return per_step_draft_out_cache_loc(loc, fb.batch_size, self.topk, self.num_steps)[0]


@mutant("multi_step_wrong_slice", ("multi_step_draft",), "spec §4.3 (2), §9.10",
        expected=("write_targets", "pool_bytes"))
class MultiStepWrongSlice(UnifiedEngine):
    """A multi-step draft stores every step with step 0's slice of ``out_cache_loc``."""

    backend_cls = _Step0Backend


class _EvictKeepsMapping(SWAAllocator):
    def free_swa_out_of_window(self, full_slots):
        self.release_swa_pages(full_slots)


@mutant("evict_keeps_mapping", ("decode", "target_verify"), "spec §2.5, §9.15 (PR #25385)",
        expected=("invariants",))
class EvictKeepsMapping(UnifiedEngine):
    """Window eviction frees the SWA pages without zeroing ``M``: the mapping aliases pages
    handed to another request."""

    allocator_cls = _EvictKeepsMapping


class _CopyFieldBackend(DSV4Backend):
    def copy_graph_metadata(self, persistent, temp):
        if not isinstance(persistent.__dict__.get("core_attn_metadata"), CoreAttnMetadata):
            return super().copy_graph_metadata(persistent, temp)
        copy_metadata(temp.core_attn_metadata, persistent.core_attn_metadata,
                      CoreAttnMetadata.CHECK_EQ_FIELDS,
                      CoreAttnMetadata.COPY_FIELDS + ("swa_out_cache_loc",), ())


@mutant("swa_loc_copy_field", ("decode",), "spec §4.2, §9.12", expected=("error",))
class SwaLocCopyField(UnifiedEngine):
    """``swa_out_cache_loc`` treated as a copy field across replays: the copy asserts at
    replay prep (a target error)."""

    backend_cls = _CopyFieldBackend


class _CopyingPool(SWAKVPool):
    def register_mapping(self, mapping):
        super().register_mapping(mapping.clone())


@mutant("mapping_copied", ("decode", "draft_extend"), "spec §2.1 (shared mapping), §9.16",
        expected=("invariants", "write_targets", "pool_bytes"))
class MappingCopied(UnifiedEngine):
    """The pools keep a copy of ``M`` instead of the allocator's tensor: draft and target see
    stale peers."""

    pool_cls = _CopyingPool


class _OnesDraftExtendRunner(DraftExtendGraphRunner):
    def prepare_capture_buffers(self):
        super().prepare_capture_buffers()
        self.static_loc.fill_(self.static_loc_init)


@mutant("draft_extend_buffer_ones", ("draft_extend",), "spec §5.2, §9.17",
        expected=("pool_bytes", "write_set", "agreement", "contracts"))
class DraftExtendBufferOnes(UnifiedEngine):
    """The draft-extend static location buffer keeps its ones at capture: warm-up writes hit
    ``M[1]``, a live slot when P == 1."""

    draft_extend_runner_cls = _OnesDraftExtendRunner


@mutant("graph_less", ("decode",), "spec §5.1 (can_run: a batch that fits a captured bucket "
        "replays its graph); issue 10 self-report experiment", expected=("exec_path",))
class GraphLess(UnifiedEngine):
    """A runner whose ``can_run`` never accepts: every graph step runs eagerly."""

    def use_graph(self, step, n):
        """``can_run`` that never accepts: every graph step runs on the eager path, and the
        Observation says so truthfully; only a check that knows the Case's path can object."""
        return False


class _MisalignedRowsBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        super()._store(cache, loc, rows.roll(1, 0))


@mutant("rows_misaligned", ("decode", "target_verify"),
        "spec §9.13 / §9.14 (K rows re-indexed apart from their locations; PR #26375, #29457 "
        "class)", expected=("pool_bytes",))
class RowsMisaligned(UnifiedEngine):
    """K rows reach the store shifted by one against their locations: every slot is right,
    only the bytes in it are not."""

    backend_cls = _MisalignedRowsBackend


class _DropsLiveLocBackend(DSV4Backend):
    def out_graph_draft_extend(self, fb, bs, loc, seq_lens):
        md = super().out_graph_draft_extend(fb, bs, None, seq_lens)
        if self.swa_loc_buffer is not None and loc is not None and isinstance(md, AttnMetadata):
            md.core_attn_metadata.swa_out_cache_loc = self.refill_swa_loc_buffer(loc)
        return md


@mutant("draft_extend_prep_drops_live_loc", ("draft_extend", "draft_extend_buffer"),
        "PR #27091 review (the draft-extend out-graph prep called its builder without "
        "out_cache_loc, which then synthesised zeros), spec §4.4 and §9.1; sglang 0.5.23 "
        "init_forward_metadata_out_graph pads the live locations 'so raw_out_loc reflects the "
        "actual replay out_cache_loc'", expected=("prepared",))
class DraftExtendPrepDropsLiveLoc(UnifiedEngine):
    """The draft-extend graph's out-graph prep builds ``raw_out_loc`` from synthetic zeros on a
    replay: the metadata carries none of the live locations, while the stores still write the
    right slots (the resolver's live fallback, or the refilled buffer) - latent: only the
    prepared metadata shows it."""

    backend_cls = _DropsLiveLocBackend


class _KeptStampBackend(DSV4Backend):
    def copy_graph_metadata(self, persistent, temp):
        core = getattr(persistent, "core_attn_metadata", None)
        kept = core.swa_out_cache_loc if core is not None else None
        super().copy_graph_metadata(persistent, temp)
        if kept is not None:
            core.swa_out_cache_loc = kept


@mutant("graph_swa_loc_kept", ("decode", "target_verify"),
        "spec §4.2 (swa_out_cache_loc is an assign field: after replay_cuda_graph_metadata_from "
        "the persistent metadata holds the fresh value, None) and §9.12 (a stale Python "
        "reference kept after replay)", expected=("prepared",))
class GraphSwaLocKept(UnifiedEngine):
    """A replay's metadata keeps the stamped SWA locations of the bucket's previous replay:
    the captured stores do not read the attribute, so they stay right - latent for every
    consumer outside the graph."""

    backend_cls = _KeptStampBackend


class _StaleSeqLensRunner(DecodeGraphRunner):
    def load_batch(self, fb, bs):
        kept = self.static_seq_lens.clone()
        super().load_batch(fb, bs)
        self.static_seq_lens[fb.batch_size:bs].copy_(kept[fb.batch_size:bs])


@mutant("graph_pad_seq_lens_stale", ("decode", "target_verify"),
        "spec §5.1 (load_batch: when bs != raw_bs, seq_lens filled with the backend's fill "
        "value, DSV4: 1; older runners left the req_pool_indices tail unreset)",
        expected=("prepared",))
class GraphPadSeqLensStale(UnifiedEngine):
    """A decode / verify graph padded to its bucket keeps a larger batch's ``seq_lens`` for its
    padded requests: the stores write through the zeroed location buffer and stay right -
    latent for every reader of the lengths (the attention's read side)."""

    decode_runner_cls = _StaleSeqLensRunner


# ----------------------------------------------------------------------------- the release's code
# (sglang target; the zoo runs them where SGLang is installed: --mutant NAME with the release's
# python). Their engines: swafuzz.features.dense.sglang_mutants, which imports the adapter.
@mutant("segment_free_keeps_mapping", ("decode", "target_verify"),
        "spec §2.5 (window eviction: free the SWA side of tokens[evicted:frontier] and unmap "
        "them), §9.15 (unmapped in-window positions / eviction frontier; the segment free "
        "path of PR #38519)", expected=("invariants",))
class SegmentFreeKeepsMapping(SGLangMutant):
    """The release's ``SWATokenToKVPoolAllocator.free_swa_segment`` (the allocator's free on the
    scheduler's sliding-window eviction, 0.5.22+) hands the SWA pages back but leaves
    ``M[full]`` pointing at them: the evicted positions alias pages the next allocation takes.
    Only the release's eviction path reaches it (0.5.12's eviction calls ``free_swa``)."""

    build = "swafuzz.features.dense.sglang_mutants:SegmentFreeKeepsMappingEngine"
    needs = "SEGMENT_EVICT"
