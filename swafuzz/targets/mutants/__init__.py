"""The bug zoo: one documented mutant of the ``unified`` target per bug class of spec §9.

Each mutant is a subclass of :class:`targets.engine.UnifiedEngine` that swaps ONE component class
for a subclass overriding one method (two where the bug needs a source and a missing guard), so
the engine code is never copied. Each names the upstream PR/issue or spec § it reintroduces, and
the scenario kinds where the bug shows (the zoo fuzzes those). Registered as ``mutant:<name>``.

==  ============================  ========================================  =====================
#   name                          bug (source)                              caught by (expected)
==  ============================  ========================================  =====================
1   draft_extend_zeros            draft-extend bucket metadata from         write_targets,
                                  synthetic zeros, resolver trusts it        pool_bytes
                                  (PR #27091 review, spec §9.1)
2   no_length_check               resolver without the length check after   contracts
                                  DP re-padding (spec §9.2, §5.4)
3   idle_uses_cache               resolver without the IDLE guard: eager    write_targets
                                  MTP IDLE reuses stale metadata (PR #15227
                                  class, spec §9.4)
4   pad_rows_not_zeroed           static loc buffer not re-zeroed when raw  write_targets,
                                  bs shrinks inside a bucket (PR #24743)     write_set
5   memo_data_ptr                 translation memo keyed on (data_ptr,      write_targets
                                  numel), no invalidation (PR #25824 era)
6   memo_storage_ptr              memo keyed on the storage pointer: equal- write_targets
                                  length views collide (PR #25824 report)
7   layer_cache_no_reset          layer-keyed cache recomputed at global    write_targets
                                  layer 0 only (spec §9.7's layer-0 rule),
                                  never reset; NOT shipped 0.5.12, which
                                  keys on the pool's start_layer
8   int64_store_locs              translation without the int32 cast: int64 contracts
                                  locations reach the int32 store (§9.8)
9   host_baked_translation        translation computed on the host at       capture_freeze,
                                  capture, baked into the graph (PR #38137   agreement
                                  class, spec §2.7(e))
10  negative_loc_wraps            padded rows at -1 translate through the   redzones, contracts
                                  sentinel; store without its contract
                                  writes before the buffer (spec §9.9)
11  multi_step_wrong_slice        multi-step draft stores every step with   write_targets
                                  step 0's slice (spec §9.10)
12  evict_keeps_mapping           window eviction frees SWA pages without   invariants
                                  zeroing M (spec §9.15, PR #25385)
13  swa_loc_copy_field            swa_out_cache_loc treated as a copy      error (assertion at
                                  field across replays (spec §4.2, §9.12)   replay prep)
14  mapping_copied                the pools keep a copy of M instead of     invariants,
                                  the allocator's tensor: draft and target   write_targets
                                  see stale peers (spec §2.1, §9.16)
15  draft_extend_buffer_ones      the draft-extend static loc buffer keeps  pool_bytes,
                                  its ones at capture: warm-up writes hit    write_set
                                  M[1], a live slot when P == 1 (§9.17)
16  graph_less                    a runner whose ``can_run`` never accepts: exec_path (alone)
                                  every graph step runs eagerly (spec §5.1;
                                  issue 10 self-report experiment)
17  dp_never_pads                 DP attention without ``_pad_inputs_to_    exec_path (alone)
                                  size``: the rank forwards only its own
                                  rows (spec §5.4 (2)-(4); issue 10)
18  rows_misaligned               K rows reach the store shifted by one     pool_bytes (alone)
                                  against their locations (spec §9.13,
                                  §9.14: rows re-indexed apart from the
                                  loc, PR #26375 / #29457 class)
19  remap_new_tensor              HiCache load-back rebuilds M as a new     capture_freeze,
                                  tensor and re-registers the pools:        write_targets, ...
                                  graphs captured before keep reading the   (only the remap step
                                  old one (spec §2.8, PR #25889 class)      reaches it)
20  dp_verify_not_rebound         DP re-padding of a target-verify batch    exec_path (alone;
                                  pads seq_lens/positions but does not      only DP on verify
                                  rebind out_cache_loc: the stores write    reaches it)
                                  the unpadded rows (spec §5.4 (4), §6
                                  stale-shape case, PR #27091)
21  dp_extend_replays_graph       can_run without the extend-in-batch       exec_path (alone;
                                  guard: a batch DP rewrote to EXTEND       only dp_extend
                                  replays its decode/verify graph (spec     reaches it)
                                  §5.4 (3))
22  raw_metadata_assumed_core     resolver reads ``core_attn_metadata``     error (AttributeError;
                                  off any non-None metadata: Raw metadata   only prep_in_graph
                                  (no such attribute) left in place by the  reaches it)
                                  draft-extend graph or an eager MTP IDLE
                                  crashes the store (spec §4.5 "Raw
                                  metadata -> NONE"; §6: the upstream test
                                  does not cover Raw metadata)
23  draft_extend_buffer_tail_kept the pre-allocated draft-extend SWA loc   write_targets,
                                  buffer refilled without ``buf[n:] = 0``:  pool_bytes, ...
                                  padded rows of a smaller replay write     (only
                                  the slots a larger one left (PR #34890,   draft_extend_buffer
                                  spec §4.7; the PR #24743 class)           reaches it)
24  store_dense_page_stride       the store addresses slot s at             redzones, pool_bytes
                                  ``s * row_bytes`` (dense stride P*row     (only padded_pages
                                  bytes) in a pool whose pages are padded   reaches it)
                                  (spec §4.6: DSV4 page stride
                                  ceil(584*P/576)*576 bytes; §9.13 class)
25  dsv4_token_contiguous         layout dsv4: each token stored as one     pool_bytes (only
                                  584-byte record, scales at offset*584 +   dsv4_layout reaches
                                  576 instead of 576*P + offset*8 (§4.6)    it; P >= 2)
26  dsv4_rope_quantized           layout dsv4: the rope tile quantized to   pool_bytes (only
                                  fp8 like the nope tiles, its scale in     dsv4_layout reaches
                                  the scale pad byte (§4.6: bf16 rope)      it)
27  dsv4_dense_page_stride        layout dsv4: pages addressed at 584*P     pool_bytes, redzones
                                  bytes, not ceil(584*P/576)*576 (§4.6;     (only dsv4_layout
                                  §9.13 class)                              reaches it)
28  verify_reject_keeps_swa       the post-verify free of rejected draft    invariants (only
                                  slots releases their full pages but not  verify with accept
                                  their SWA pages, M still maps them        reaches it)
                                  (sglang issue #27789 "SWA pool leak with
                                  spec and page_size>1"; spec §9.15)
29  finish_frees_shared_prefix    finish frees every page of the request,   invariants, ... (only
                                  shared prefix pages another live request  admit with a prefix
                                  still holds included (use after free of   reaches it)
                                  a radix-cache prefix: spec §9.15
                                  over-free class, PR #38519 / #36637;
                                  recycled SWA pages under a live reader,
                                  issue #9123)
==  ============================  ========================================  =====================

Rows 25-27 live in :mod:`targets.mutants.dsv4_layout`; mutants 30-39 (the V4.1 request window,
late-layer tail and encoder replay) in :mod:`targets.mutants.window_mutants`, with their own table.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from swafuzz.targets import register
from swafuzz.targets.allocator import SWAAllocator
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.dp import DPAttention
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import CoreAttnMetadata, copy_metadata
from swafuzz.targets.runners import DecodeGraphRunner, DraftExtendGraphRunner


@dataclass(frozen=True)
class MutantSpec:
    engine: type
    kinds: tuple[str, ...]  # scenario kinds where the bug shows
    source: str  # upstream PR/issue or spec section
    kernel_level: bool = False  # the bug is in what reaches the kernel (address arithmetic)


MUTANTS: dict[str, MutantSpec] = {}


def mutant(name: str, kinds: tuple[str, ...], source: str, kernel_level: bool = False):
    def deco(cls):
        cls.mutant_name = name
        MUTANTS[name] = MutantSpec(cls, kinds, source, kernel_level)
        register(f"mutant:{name}", cls)
        return cls

    return deco


# 1 ------------------------------------------------------------------------------------------
class _ZeroDraftExtendBackend(DSV4Backend):
    def out_graph_draft_extend(self, fb, bs, loc, seq_lens):
        """PR-review era: built without the real out_cache_loc (the prep synthesises zeros), and
        the metadata's swa_out_cache_loc stamped from them; the resolver then trusts it."""
        md = super().out_graph_draft_extend(fb, bs, None, seq_lens)
        core = md.core_attn_metadata
        core.swa_out_cache_loc = self.translate(core.raw_out_loc)
        return md


@mutant("draft_extend_zeros", ("draft_extend", "episode"), "PR #27091 review (P1), spec §9.1")
class DraftExtendZeros(UnifiedEngine):
    backend_cls = _ZeroDraftExtendBackend


# 2 ------------------------------------------------------------------------------------------
class _NoLengthCheckBackend(DSV4Backend):
    def cache_usable(self, cached, fb, n):
        return cached is not None and not fb.forward_mode.is_idle()


@mutant("no_length_check", ("dp_padded",), "spec §9.2 / §5.4 (PR #27091: DP re-padding)")
class NoLengthCheck(UnifiedEngine):
    backend_cls = _NoLengthCheckBackend


# 3 ------------------------------------------------------------------------------------------
class _IdleUsesCacheBackend(DSV4Backend):
    def cache_usable(self, cached, fb, n):
        return cached is not None and cached.shape[0] == n


@mutant("idle_uses_cache", ("idle",), "PR #15227 class, spec §9.4")
class IdleUsesCache(UnifiedEngine):
    backend_cls = _IdleUsesCacheBackend


# 4 ------------------------------------------------------------------------------------------
class _NoZeroDecodeRunner(DecodeGraphRunner):
    def fill_static_loc(self, live_loc, rows):
        """Copies the real rows only: padded rows keep the previous batch's locations."""
        self.static_loc[:live_loc.numel()].copy_(live_loc)


@mutant("pad_rows_not_zeroed", ("decode", "target_verify"), "PR #24743, spec §9.5")
class PadRowsNotZeroed(UnifiedEngine):
    decode_runner_cls = _NoZeroDecodeRunner


# 5, 6 ---------------------------------------------------------------------------------------
class _MemoPool(SWAKVPool):
    """The PR #25824 memo: ``key = (pointer, numel)``; nothing else is compared and nothing
    invalidates it."""

    def _memo_key(self, loc: torch.Tensor):
        return (loc.data_ptr(), loc.numel())

    def translate_loc_from_full_to_swa(self, loc):
        key = self._memo_key(loc)
        if getattr(self, "_cached_loc_key", None) != key:
            self._cached_swa_loc = super().translate_loc_from_full_to_swa(loc)
            self._cached_loc_key = key
        return self._cached_swa_loc


@mutant("memo_data_ptr", ("decode", "episode"), "PR #25824 era, spec §2.7, §9.6")
class MemoDataPtr(UnifiedEngine):
    pool_cls = _MemoPool


class _StorageMemoPool(_MemoPool):
    def _memo_key(self, loc):
        return (loc.untyped_storage().data_ptr(), loc.numel())


@mutant("memo_storage_ptr", ("multi_step_draft", "decode"),
        "PR #25824 report (storage pointer collides for views), spec §9.6")
class MemoStoragePtr(UnifiedEngine):
    pool_cls = _StorageMemoPool


# 7 ------------------------------------------------------------------------------------------
class _LayerCacheBackend(DSV4Backend):
    def get_store_loc(self, layer_id: int, fb: ForwardBatch):
        """A layer-keyed cache under the layer-0 rule of spec §9.7: recompute the pool's
        ``cached_loc`` when the *global* ``layer_id == 0`` (or when unset), else reuse it. The
        draft pool's layers start after the target's, so its cache is computed once and never
        again (nothing resets it).

        This is not what sglang 0.5.12 ships: its ``DeepSeekV4TokenToKVPool`` recomputes at the
        pool's ``start_layer`` (every forward of every pool), and its bug (``register_mapping``
        not clearing ``cached_loc``, fixed by PR #25889 / #26079) needs a mapping rebuilt
        between forwards, which no Case step does. ``--target sglang`` with 0.5.12 installed
        runs that shipped code for real; this mutant keeps the layer-0 variant because it is
        the form of the bug class the scenarios can reach (a pool whose first storing layer is
        not layer 0, as a pipeline stage or a draft model numbered after the target)."""
        pool = self.pool
        if layer_id == 0 or getattr(pool, "cached_loc", None) is None:
            pool.cached_loc = self.get_swa_out_cache_loc(fb)
        return pool.cached_loc


@mutant("layer_cache_no_reset", ("draft_extend", "multi_step_draft"),
        "spec §9.7 layer-0 rule, spec §2.8 (0.5.12 keys on start_layer; PR #25889)")
class LayerCacheNoReset(UnifiedEngine):
    backend_cls = _LayerCacheBackend


# 8 ------------------------------------------------------------------------------------------
class _Int64Backend(DSV4Backend):
    def translate(self, loc):
        """The newest pool's raw gather: int64, the ``.to(int32)`` cast missing."""
        return self.pool.mapping[loc]


@mutant("int64_store_locs", ("decode",), "spec §2.2 / §9.8 (int64 translation to int32 kernel)",
        kernel_level=True)
class Int64StoreLocs(UnifiedEngine):
    backend_cls = _Int64Backend


# 9 ------------------------------------------------------------------------------------------
class _HostBakedBackend(DSV4Backend):
    def translate_in_graph(self, loc):
        """Translation done on the host when not capturing (warm-up), and the resulting constant
        reused inside the captured graph: replays write the warm-up batch's slots."""
        from swafuzz.kernels.launch import capturing

        if capturing() and getattr(self, "_host_const", None) is not None:
            return self._host_const
        vals = self.translate(loc).tolist()
        self._host_const = torch.tensor(vals, dtype=torch.int32, device=loc.device)
        self.baked["swa_out_cache_loc"] = vals
        return self._host_const


@mutant("host_baked_translation", ("decode",), "PR #38137 class, spec §2.7(e)")
class HostBakedTranslation(UnifiedEngine):
    backend_cls = _HostBakedBackend


# 10 -----------------------------------------------------------------------------------------
class _MinusOneRunner(DecodeGraphRunner):
    def fill_static_loc(self, live_loc, rows):
        """Pads with -1 (an uninitialised / ``last_loc = -1`` style buffer) instead of 0."""
        super().fill_static_loc(live_loc, rows)
        self.static_loc[live_loc.numel():rows].fill_(-1)


class _UncheckedStoreBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        """The store launched without its value contract."""
        self.pool.impl.store_unchecked(cache, loc, rows)


@mutant("negative_loc_wraps", ("decode",), "spec §2.1 sentinel, §9.9", kernel_level=True)
class NegativeLocWraps(UnifiedEngine):
    decode_runner_cls = _MinusOneRunner
    backend_cls = _UncheckedStoreBackend


# 11 -----------------------------------------------------------------------------------------
class _Step0Backend(DSV4Backend):
    def select_step_loc(self, fb, loc):
        sliced = super().select_step_loc(fb, loc)
        if sliced is loc:
            return loc
        from swafuzz.targets.backend import per_step_draft_out_cache_loc

        return per_step_draft_out_cache_loc(loc, fb.batch_size, self.topk, self.num_steps)[0]


@mutant("multi_step_wrong_slice", ("multi_step_draft",), "spec §4.3 (2), §9.10")
class MultiStepWrongSlice(UnifiedEngine):
    backend_cls = _Step0Backend


# 12 -----------------------------------------------------------------------------------------
class _EvictKeepsMapping(SWAAllocator):
    def free_swa_out_of_window(self, full_slots):
        """Releases the SWA pages but leaves ``M`` pointing at them (aliasing once reused)."""
        self.release_swa_pages(full_slots)


@mutant("evict_keeps_mapping", ("decode", "target_verify"), "spec §2.5, §9.15 (PR #25385)")
class EvictKeepsMapping(UnifiedEngine):
    allocator_cls = _EvictKeepsMapping


# 13 -----------------------------------------------------------------------------------------
class _CopyFieldBackend(DSV4Backend):
    def copy_graph_metadata(self, persistent, temp):
        """``swa_out_cache_loc`` in the copy list instead of the assign list."""
        if not isinstance(persistent.__dict__.get("core_attn_metadata"), CoreAttnMetadata):
            return super().copy_graph_metadata(persistent, temp)
        copy_metadata(temp.core_attn_metadata, persistent.core_attn_metadata,
                      CoreAttnMetadata.CHECK_EQ_FIELDS,
                      CoreAttnMetadata.COPY_FIELDS + ("swa_out_cache_loc",), ())


@mutant("swa_loc_copy_field", ("decode",), "spec §4.2, §9.12")
class SwaLocCopyField(UnifiedEngine):
    backend_cls = _CopyFieldBackend


# 14 -----------------------------------------------------------------------------------------
class _CopyingPool(SWAKVPool):
    def register_mapping(self, mapping):
        """Keeps a snapshot of ``M`` instead of a reference: later allocations never reach it."""
        super().register_mapping(mapping.clone())


@mutant("mapping_copied", ("decode", "draft_extend"), "spec §2.1 (shared mapping), §9.16")
class MappingCopied(UnifiedEngine):
    pool_cls = _CopyingPool


# 15 -----------------------------------------------------------------------------------------
class _OnesDraftExtendRunner(DraftExtendGraphRunner):
    def prepare_capture_buffers(self):
        """Capture state with the loc buffer left at its initial ones (not zeroed)."""
        super().prepare_capture_buffers()
        self.static_loc.fill_(self.static_loc_init)


@mutant("draft_extend_buffer_ones", ("draft_extend",), "spec §5.2, §9.17")
class DraftExtendBufferOnes(UnifiedEngine):
    draft_extend_runner_cls = _OnesDraftExtendRunner


# 16 -----------------------------------------------------------------------------------------
@mutant("graph_less", ("decode",), "spec §5.1 (can_run: a batch that fits a captured bucket "
        "replays its graph); issue 10 self-report experiment")
class GraphLess(UnifiedEngine):
    def use_graph(self, step, n):
        """``can_run`` that never accepts: every graph step runs on the eager path, and the
        Observation says so truthfully; only a check that knows the Case's path can object."""
        return False


# 17 -----------------------------------------------------------------------------------------
class _NeverPadDP(DPAttention):
    def pad_inputs_to_size(self, fb, num_tokens, batch_size=None):
        """``_pad_inputs_to_size`` skipped: the rank forwards its own rows only, while every
        other rank forwards ``num_tokens`` (the collectives of DP attention would mismatch)."""
        return None


@mutant("dp_never_pads", ("dp_padded",), "spec §5.4 (2)-(4) (MAX_LEN padding, "
        "_pad_inputs_to_size); issue 10 self-report experiment")
class DPNeverPads(UnifiedEngine):
    dp_cls = _NeverPadDP


# 18 -----------------------------------------------------------------------------------------
class _MisalignedRowsBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        """The K rows reach the store shifted by one row against their locations (rows
        re-indexed apart from the loc: CP / piecewise narrowing)."""
        super()._store(cache, loc, rows.roll(1, 0))


@mutant("rows_misaligned", ("decode", "target_verify"),
        "spec §9.13 / §9.14 (K rows re-indexed apart from their locations; PR #26375, #29457 "
        "class)")
class RowsMisaligned(UnifiedEngine):
    backend_cls = _MisalignedRowsBackend


# 19 -----------------------------------------------------------------------------------------
class _NewTensorRemapAllocator(SWAAllocator):
    def rebuild_mapping(self):
        """Load-back builds a fresh ``M`` tensor (same contents) instead of rewriting it in
        place; the pools are re-registered with it, but every graph captured before still reads
        the old tensor, which no longer sees allocations."""
        self.mapping = self.mapping.clone()
        return self.mapping


@mutant("remap_new_tensor", ("remap",), "spec §2.8 (register_mapping after a HiCache "
        "load-back / commit, sglang PR #25889), §4.2 (graphs read the captured tensors)")
class RemapNewTensor(UnifiedEngine):
    allocator_cls = _NewTensorRemapAllocator


__all__ = ["MUTANTS", "MutantSpec"]


# 20 -----------------------------------------------------------------------------------------
class _VerifyNotReboundDP(DPAttention):
    def pad_inputs_to_size(self, fb, num_tokens, batch_size=None):
        """Re-padding of a TARGET_VERIFY batch pads ``seq_lens`` / ``positions`` and the batch
        size but forgets to rebind ``out_cache_loc``: the stores write only this rank's rows."""
        if fb.forward_mode != ForwardMode.TARGET_VERIFY:
            return super().pad_inputs_to_size(fb, num_tokens, batch_size)
        loc = fb.out_cache_loc
        super().pad_inputs_to_size(fb, num_tokens, batch_size)
        fb.out_cache_loc = loc


@mutant("dp_verify_not_rebound", ("dp_spec",), "spec §5.4 (4) and §6 (DP re-padding of "
        "speculative batches rebinds out_cache_loc; 'spec-v2 and DP padding rebind "
        "out_cache_loc', PR #27091)")
class DPVerifyNotRebound(UnifiedEngine):
    dp_cls = _VerifyNotReboundDP


# 21 -----------------------------------------------------------------------------------------
@mutant("dp_extend_replays_graph", ("dp_spec",), "spec §5.4 (3) (a batch rewritten to EXTEND "
        "because another DP rank extends cannot run a decode/verify graph; can_run's "
        "extend-in-batch guard)")
class DPExtendReplaysGraph(UnifiedEngine):
    def can_run_graph(self, step, fb, n):
        """``can_run`` without the extend-in-batch guard: the rewritten EXTEND batch replays
        the graph its original mode would use."""
        return self.use_graph(step, n)


# 22 -----------------------------------------------------------------------------------------
class _CoreAssumedBackend(DSV4Backend):
    def get_swa_out_cache_loc(self, fb):
        """Resolver that guards None metadata but reads ``core_attn_metadata`` off anything
        else: Raw metadata (SGLANG_PREP_IN_CUDA_GRAPH) has no such attribute."""
        n = fb.out_cache_loc.shape[0]
        md = self.forward_metadata
        cached = md.core_attn_metadata.swa_out_cache_loc if md is not None else None
        if self.cache_usable(cached, fb, n):
            return cached
        return self.translate(fb.out_cache_loc)


@mutant("raw_metadata_assumed_core", ("raw_metadata",), "spec §4.5 (forward_metadata None, "
        "Raw metadata or any non-DSV4 object -> no cached location) and §6 (the upstream "
        "resolver test does not cover Raw metadata)")
class RawMetadataAssumedCore(UnifiedEngine):
    backend_cls = _CoreAssumedBackend


# 23 -----------------------------------------------------------------------------------------
class _TailKeptBackend(DSV4Backend):
    def refill_swa_loc_buffer(self, loc):
        """Refill without zeroing the tail: entries past ``n`` keep a larger replay's slots."""
        buf, n = self.swa_loc_buffer, loc.numel()
        if n > buf.numel():
            return None
        buf[:n] = self.translate(loc)
        return buf[:n]


@mutant("draft_extend_buffer_tail_kept", ("draft_extend_buffer",), "sglang PR #34890 (the "
        "draft-extend SWA loc buffer refilled outside the graph: buf[n:] = 0, spec §4.7); the "
        "PR #24743 class (padded rows not zeroed)")
class DraftExtendBufferTailKept(UnifiedEngine):
    backend_cls = _TailKeptBackend


# 24 -----------------------------------------------------------------------------------------
class _DenseStrideBackend(DSV4Backend):
    def _store(self, cache, loc, rows):
        """The store handed a dense re-view of the cache (page stride ``P * D``): slot ``s``
        lands at element ``s * D`` from the buffer start, ignoring the padded page stride."""
        pages, p, d = cache.shape
        super()._store(cache.as_strided(cache.shape, (p * d, d, 1)), loc, rows)


@mutant("store_dense_page_stride", ("padded_pages",), "spec §4.6 (the DSV4 SWA pool's page "
        "stride ceil(584*P/576)*576 bytes is not P * row bytes; the store kernels address "
        "page * PageBytes); §9.13 address-arithmetic class")
class StoreDensePageStride(UnifiedEngine):
    backend_cls = _DenseStrideBackend


# 25-27 --------------------------------------------------------------------------------------
from swafuzz.targets.mutants import dsv4_layout as _dsv4  # noqa: E402

for _name, _cls in (("dsv4_token_contiguous", _dsv4.DSV4TokenContiguous),
                    ("dsv4_rope_quantized", _dsv4.DSV4RopeQuantized),
                    ("dsv4_dense_page_stride", _dsv4.DSV4DensePageStride)):
    mutant(_name, ("dsv4_layout",), _dsv4.SOURCES[_name])(_cls)
# 28 -----------------------------------------------------------------------------------------
class _RejectKeepsSWA(SWAAllocator):
    def free_rejected(self, full_slots):
        """Frees the rejected draft slots' full pages only: their SWA pages are never
        returned and ``M`` keeps pointing at them (a leaked SWA page per rejected page)."""
        self.full_free.update({f // self.page_size for f in full_slots})


@mutant("verify_reject_keeps_swa", ("verify_reject",), "sglang issue #27789 (SWA pool leak "
        "with speculative decoding and page_size > 1 on DSV4); post-verify free of rejected "
        "draft tokens, sglang 0.5.12 EagleVerifyInput.verify; spec §2.3 free = full + free_swa, "
        "§9.15")
class VerifyRejectKeepsSWA(UnifiedEngine):
    allocator_cls = _RejectKeepsSWA


# 29 -----------------------------------------------------------------------------------------
class _FinishFreesShared(SWAAllocator):
    def pages_alone(self, rid, slots):
        """Ignores the other holders: a finishing request frees every page it has a token on,
        shared prefix pages included (no lock reference)."""
        return sorted({f // self.page_size for f in slots})


@mutant("finish_frees_shared_prefix", ("prefix_share",), "spec §9.15 (over-free of slots "
        "another owner still holds: PR #38519, PR #36637) and sglang issue #9123 (SWA pages "
        "recycled under a live reader); radix-cache lock references (SWARadixCache "
        "inc_lock_ref / dec_lock_ref)")
class FinishFreesSharedPrefix(UnifiedEngine):
    allocator_cls = _FinishFreesShared


# 30-39: the V4.1 request window, late-layer tail and encoder replay (issue 12), and 40-46: the
# per-request SWA ring (issue 12), each in its own module; importing registers them
from swafuzz.targets.mutants import ring as _ring  # noqa: E402,F401
from swafuzz.targets.mutants import window_mutants  # noqa: E402,F401

# isort: split
# 40-43: DECODE graphs under a request window (issue 12, window_graphs)
from swafuzz.targets.mutants import window_graph_mutants  # noqa: E402,F401

# isort: split
# breakable prefill graphs under a request window (issue 12, prefill_graphs)
from swafuzz.targets.mutants import window_prefill_mutants  # noqa: E402,F401

# isort: split
# prefix hits under a late-layer tail, the fold's compressor locations and the separate
# replay forward (issue 12, tail_prefix / replay_separate)
from swafuzz.targets.mutants import tail_prefix_mutants  # noqa: E402,F401

# isort: split
# 50-55: the late-layer tail under graphs (issue 12, tail_graphs)
from swafuzz.targets.mutants import tail_graph_mutants  # noqa: E402,F401

# isort: split
# 47-49: window verify (DSpark early metadata) and DP-padded EXTEND (issue 12 item 2)
from swafuzz.targets.mutants import dspark_mutants  # noqa: E402,F401

# isort: split
# 50-53: the DSpark draft block on a ring (issue 12, issue12-ringdraft)
from swafuzz.targets.mutants import ring_draft_mutants  # noqa: E402,F401

# isort: split
# 56: the window's tags at history use (issue 12, W5; harness.history_checks)
from swafuzz.targets.mutants import w5_mutants  # noqa: E402,F401
