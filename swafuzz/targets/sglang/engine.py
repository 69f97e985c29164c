""":class:`SGLangEngine`: the engine with SGLang's own code swapped in as component classes.

Importing this module imports SGLang (see :mod:`swafuzz.targets.sglang` for the supported
releases and the real/modelled table). The seams:

* :class:`SGLangAllocator` (``allocator_cls``) drives SGLang's ``SWATokenToKVPoolAllocator``
  built around the target pool's DSV4 pool object; it keeps only the per-request bookkeeping the
  Case contract needs (token lists, eviction frontiers) and records every token it allocated as
  ``[full slot, SWA slot]`` (``alloc_log``), which the observation carries to the oracle: the
  oracle validates those choices instead of predicting SGLang's free-list order.
* :class:`SGLangPool` (``pool_cls``) keeps swafuzz's redzoned SWA buffers (modelled) and holds a
  ``DeepSeekV4TokenToKVPool`` (``real``) whose own ``register_mapping`` and
  ``translate_loc_from_full_to_swa`` (and, in 0.5.12, its layer-keyed ``cached_loc``) run; its
  store entry point is tapped so the rows land in swafuzz's buffers through the selected store
  kernel, at exactly the locations SGLang's code passes.
* :class:`SGLangBackend` (``backend_cls``) runs SGLang's ``DeepseekV4AttnBackend.store_cache``
  (0.5.23: with its resolver ``get_swa_out_cache_loc``) and, in 0.5.23, its
  ``init_forward_metadata_in_graph`` stamp, on an instance built without ``__init__`` whose
  ``forward_metadata`` is the harness's metadata (modelled lifecycle, see the table).

ForwardMode is matched by name: the release's member with the model's member's name.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import torch

from swafuzz import features as registry
from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.allocator import AllocationError
from swafuzz.targets.backend import DSV4Backend, StoreRecord
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import GraphBucket, logical_forward_mode
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import AttnMetadata, RawDecodeMetadata
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.runners import MultiStepDraftRunner
from swafuzz.targets.sglang import release
from swafuzz.targets.sglang.target import TARGET
from swafuzz.targets.sharing import held_elsewhere, rejected_split

VERSION, ADAPTER = release()

# The fused store path (default on in both releases) is the one whose locations matter; pin it
# so an environment setting cannot route 0.5.12 through its Triton quantizer instead.
os.environ.setdefault("SGLANG_OPT_USE_FUSED_STORE_CACHE", "1")

# the release's modules, found by feature (targets/sglang/features.py), not by version pin
from swafuzz.targets.sglang import features  # noqa: E402

_backend_mod = features.backend_mod
_pool_mod = features.pool_mod
_paged_mod = features.paged_mod
RealForwardMode = features.RealForwardMode
SWATokenToKVPoolAllocator = features.SWATokenToKVPoolAllocator
RealBackend = features.RealBackend
RealPool = features.RealPool
UNIFIED_RESOLVER = features.RESOLVER and features.IN_GRAPH
#: the store-path family (0.5.12): the pool's cached_loc translation, no resolver
STORE_PATH = features.FAMILY == "store-path"
TARGET_VERSION = f"sglang {VERSION}" + ("" if VERSION == ADAPTER else f" (adapter {ADAPTER})")


def real_mode(name: str):
    """The release's ForwardMode member called ``name`` (values differ from the model's)."""
    try:
        return RealForwardMode[name]
    except KeyError:
        raise ValueError(f"ForwardMode.{name}: sglang {VERSION} has no such member (members: "
                         f"{', '.join(m.name for m in RealForwardMode)})") from None


def real_batch(fb) -> SimpleNamespace:
    """The forward batch as SGLang's code reads it: same tensors, the release's mode."""
    return SimpleNamespace(
        forward_mode=real_mode(fb.forward_mode.name), batch_size=fb.batch_size,
        out_cache_loc=fb.out_cache_loc, seq_lens=fb.seq_lens, positions=fb.positions,
        spec_info=None)


# ----------------------------------------------------------------------------- 0.5.12 kernels
class _NaiveAllocExtend:
    """``alloc_extend_kernel[grid](...)`` of 0.5.12 routed to the release's own
    ``alloc_extend_naive`` (same arguments, device taken from the output tensor)."""

    def __getitem__(self, grid):
        def launch(prefix_lens, seq_lens, last_loc, free_pages, out_indices, _bs_pow2, page):
            _paged_mod.alloc_extend_naive(prefix_lens, seq_lens, last_loc, free_pages,
                                          out_indices, page, out_indices.device)
        return launch


if not features.NAIVE_SWITCH:  # no CPU switch of its own (0.5.12 .. 0.5.22)
    _paged_mod.alloc_extend_kernel = _NaiveAllocExtend()


# ----------------------------------------------------------------------------- allocator
def _free_page_ids(alloc) -> list[int]:
    """Every page id an SGLang token/paged allocator can still hand out (free list plus the
    released/staged pages it merges back on demand)."""
    parts = [alloc.free_pages]
    rel = getattr(alloc, "release_pages", None)
    if isinstance(rel, torch.Tensor):
        parts.append(rel)
    parts += list(getattr(alloc, "staged_pages", None) or [])
    return sorted(int(x) for t in parts for x in t.tolist())


class SGLangAllocator:
    """SGLang's ``SWATokenToKVPoolAllocator`` with the Case contract's request bookkeeping.

    Built by :meth:`SGLangEngine.make_allocator` with the target pool: the real allocator
    registers its mapping into that pool's DSV4 pool object at construction.
    """

    def __init__(self, pool: PoolConfig, device, kvcache: SGLangPool):
        self.pool = pool
        self.page_size = P = pool.page_size
        self.device = torch.device(device)
        self.real = SWATokenToKVPoolAllocator(
            size=pool.full_pages * P, size_swa=pool.swa_pages * P, page_size=P,
            dtype=torch.uint8, device=str(self.device), kvcache=kvcache.real, need_sort=True)
        if features.NAIVE_SWITCH and P > 1:
            for a in (self.real.full_attn_allocator, self.real.swa_attn_allocator):
                # the release's own switch: its torch reference allocator on CPU
                a.use_triton_kernels = False
        self.mapping = self.real.full_to_swa_index_mapping
        self.tokens: dict[int, list[int]] = {}
        self.evicted: dict[int, int] = {}
        self.alloc_log: list[list[int]] = []

    def rebuild_mapping(self) -> torch.Tensor:
        """The Case's ``remap`` (HiCache load-back / commit): the release's mapping tensor is
        rewritten in place with the same contents; the engine then registers it with every pool
        through the release's own ``register_mapping``."""
        self.mapping.copy_(self.mapping.clone())
        return self.mapping

    def take_alloc_log(self) -> list[list[int]]:
        log, self.alloc_log = self.alloc_log, []
        return log

    def free_full_pages(self) -> list[int]:
        return _free_page_ids(self.real.full_attn_allocator)

    def free_swa_pages(self) -> list[int]:
        return _free_page_ids(self.real.swa_attn_allocator)

    def _t(self, v, cpu: bool = False) -> torch.Tensor:
        return torch.tensor(v, dtype=torch.int64, device="cpu" if cpu else self.device)

    def extend(self, plan: list[tuple[int, int]]) -> list[list[int]]:
        """Append ``n`` tokens to each ``(rid, n)`` through one SGLang allocation call:
        ``alloc`` (page size 1), ``alloc_decode`` (every n == 1; 0.5.23) or ``alloc_extend``."""
        if not any(n > 0 for _, n in plan):
            return [[] for _ in plan]
        P = self.page_size
        prefix = [len(self.tokens[rid]) for rid, _ in plan]
        seq = [p + n for p, (_, n) in zip(prefix, plan)]
        total = sum(n for _, n in plan)
        last = [self.tokens[rid][-1] if self.tokens[rid] else -1 for rid, _ in plan]
        if P == 1:
            out = self.real.alloc(total)
        elif all(n == 1 for _, n in plan) and features.NAIVE_SWITCH:
            out = self.real.alloc_decode(self._t(seq), self._t(seq, cpu=True), self._t(last))
        else:
            out = self.real.alloc_extend(self._t(prefix), self._t(prefix, cpu=True), self._t(seq),
                                         self._t(seq, cpu=True), self._t(last), total)
        if out is None:
            raise AllocationError(f"extend: sglang's allocator refused {total} tokens "
                                  f"({self.real.full_available_size()} full / "
                                  f"{self.real.swa_available_size()} SWA slots free)")
        full = [int(x) for x in out.tolist()]
        if len(full) != total:
            raise AllocationError(f"extend: sglang's allocator returned {len(full)} slots for "
                                  f"{total} tokens")
        swa = self.mapping[out.to(torch.int64)].tolist()
        self.alloc_log += [[f, int(s)] for f, s in zip(full, swa)]
        res, k = [], 0
        for rid, n in plan:
            new = full[k:k + n]
            k += n
            self.tokens[rid] += new
            res.append(new)
        return res

    def admit(self, rid: int, length: int, prefix_rid: int | None = None,
              prefix_len: int = 0) -> list[int]:
        """A new request; with ``prefix_rid`` a radix-cache prefix hit: its first
        ``prefix_len`` slots are that request's (the adapter holds the lock reference the
        radix tree would), and ``alloc_extend`` runs with ``prefix_lens = prefix_len`` and the
        prefix's last slot as ``last_loc`` (page size 1: ``alloc``)."""
        if rid in self.tokens:
            raise AllocationError(f"admit: request {rid} already exists")
        self.tokens[rid], self.evicted[rid] = [], 0
        if prefix_rid is not None:
            self.tokens[rid] = self.tokens[prefix_rid][:prefix_len]
            self.evicted[rid] = min(self.evicted[prefix_rid], prefix_len)
        try:
            return self.extend([(rid, length - prefix_len)])[0]
        except AllocationError:
            del self.tokens[rid], self.evicted[rid]
            raise

    def evict(self, rid: int, window: int) -> None:
        """Window eviction (contract): ``free_swa`` of ``tokens[evicted:frontier]``."""
        toks = self.tokens[rid]
        old = self.evicted[rid]
        frontier = max(old, len(toks) - window)
        frontier -= frontier % self.page_size
        if frontier > old:
            shared = held_elsewhere(self.tokens, rid, self.page_size)
            slots = [f for f in toks[old:frontier] if f // self.page_size not in shared]
            if slots:  # a shared prefix stays: the radix tree owns it (cache_protected_len)
                self.real.free_swa(self._t(slots))
            self.evicted[rid] = frontier

    def reject(self, plan: list[tuple[int, int, int]], num_draft_tokens: int) -> None:
        """After a verify forward, the rejected draft tokens of each ``(rid, length_before,
        accepted)`` leave the request; those past the page of its last accepted token go back
        through one ``free`` call of the release's allocator (0.5.12's ``EagleVerifyInput.verify``
        frees ``out_cache_loc[evict_mask]`` the same way: full side, then ``free_swa``)."""
        freed: list[int] = []
        for rid, before, accepted in plan:
            keep, first = rejected_split(before, accepted, num_draft_tokens, self.page_size)
            toks = self.tokens[rid]
            freed += toks[first:]
            del toks[keep:]
        if freed:
            self.real.free(self._t(freed))

    def _mapped(self, slots: list[int]) -> list[int]:
        if not slots:
            return []
        m = self.mapping[self._t(slots)].tolist()
        return [f for f, s in zip(slots, m) if s > 0]

    def finish(self, rid: int) -> None:
        """Frees the pages no other live request holds (a shared prefix stays with its other
        holders, as the radix tree's lock reference keeps it). 0.5.12: ``free`` (full side,
        then ``free_swa``, which skips unmapped slots). 0.5.23: ``free_swa`` of the
        still-mapped slots, then ``free_full`` of the tokens (its ``free`` insists every slot
        still has an SWA peer). Then the other requests' deferred evictions: ``free_swa``."""
        P = self.page_size
        shared = held_elsewhere(self.tokens, rid, P)
        toks = [f for f in self.tokens.pop(rid) if f // P not in shared]  # pages it alone holds
        self.evicted.pop(rid)
        # every slot of those pages: the reserved verify slots after its last token included
        slots = sorted({f // P * P + o for f in toks for o in range(P)})
        if toks and not features.FREE_FULL:
            self.real.free(self._t(slots))
        elif toks:
            mapped = self._mapped(slots)
            if mapped:
                self.real.free_swa(self._t(mapped))
            self.real.free_full(self._t(toks))
        for other, otoks in self.tokens.items():  # deferred evictions of now unshared pages
            held = held_elsewhere(self.tokens, other, P)
            below = self._mapped([f for f in otoks[:self.evicted[other]] if f // P not in held])
            if below:
                self.real.free_swa(self._t(below))


# ----------------------------------------------------------------------------- pool
class _SWAStoreTap:
    """Stands in for the DSV4 pool's ``swa_kv_pool`` (0.5.12): its ``set_key_buffer_fused`` is
    the CUDA JIT store; the locations SGLang's pool code chose go to ``owner.sink``."""

    def __init__(self, owner: SGLangPool):
        self.owner = owner

    def set_key_buffer_fused(self, layer_id: int, loc: torch.Tensor, cache_k: torch.Tensor):
        self.owner.sink(layer_id, loc, cache_k)


def build_real_pool(owner: SGLangPool) -> object:
    """A ``DeepSeekV4TokenToKVPool`` made without ``__init__``, with the attributes its
    mapping, translation and SWA store-location code read."""
    p = object.__new__(RealPool)
    first, n = owner.start_layer, owner.num_layers
    p.start_layer, p.end_layer, p.layer_num = first, first + n - 1, n
    p._stage_start, p._stage_end = first, first + n
    p.page_size = p.swa_page_size = owner.page_size
    p.device = str(owner.device)
    p.full_to_swa_index_mapping = None
    p.request_window = None
    p.swa_req_ring_size = owner.config.swa_ring or None  # per-request SWA ring (0.5.20+)
    p.sliding_window = owner.config.window
    p.layer_transfer_counter = None
    if STORE_PATH:
        p._should_cache_swa = _pool_mod.envs.SGLANG_OPT_CACHE_SWA_TRANSLATION.get()
        p.cached_loc = None
        p.swa_kv_pool = _SWAStoreTap(owner)
    else:
        def store(layer_id, swa_loc, cache_k):
            owner.sink(p._swa_local_layer_id(layer_id), swa_loc, cache_k)
        # the release's method is one call to its CUDA JIT store with these arguments
        p.set_swa_key_buffer_radix_fused = store
    return p


class SGLangPool(SWAKVPool):
    """swafuzz's SWA buffers (modelled) + SGLang's DSV4 pool object (``real``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sink_fn = None
        self.real = build_real_pool(self)
        if self.layout == "dsv4":  # the release's Triton V4-layout store (targets/sglang/store.py)
            from swafuzz.targets.sglang.store import ReleaseDSV4Impl

            self.impl = ReleaseDSV4Impl(self.impl.inner, self.page_size)

    def register_mapping(self, mapping: torch.Tensor, again: bool = False) -> None:
        """Point the release's pool at ``mapping`` (``again``: re-register it even when it is
        the tensor the pool holds, as a HiCache load-back does - the release's own
        ``register_mapping`` then resets whatever it caches)."""
        self.mapping = mapping
        if again or self.real.full_to_swa_index_mapping is not mapping:
            self.real.register_mapping(mapping)

    def translate_loc_from_full_to_swa(self, loc: torch.Tensor) -> torch.Tensor:
        return self.real.translate_loc_from_full_to_swa(loc)

    def sink(self, local_layer: int, loc: torch.Tensor, rows: torch.Tensor) -> None:
        if self.sink_fn is None:
            raise RuntimeError(f"{self.name} pool: SGLang stored outside a backend store_cache")
        self.sink_fn(local_layer, loc, rows)


# ----------------------------------------------------------------------------- backend
class _CoreView:
    """The harness's CoreAttnMetadata as SGLang's in-graph init reads it: no compressed layers
    (``low_ratios`` empty); attribute writes land on the wrapped object."""

    low_ratios = ()

    def __init__(self, core):
        object.__setattr__(self, "_core", core)

    def __getattr__(self, name):
        return getattr(self._core, name)

    def __setattr__(self, name, value):
        setattr(self._core, name, value)


class SGLangBackend(DSV4Backend):
    """Store path (and 0.5.23's resolver and in-graph stamp) from SGLang's backend."""

    def __init__(self, pool: SGLangPool, **kwargs):
        super().__init__(pool, **kwargs)
        sh = object.__new__(RealBackend)
        sh.token_to_kv_pool = pool.real
        sh.forward_metadata = None
        sh.pre_kv_store_hook = None
        sh.topk = self.topk
        sh.speculative_num_steps = self.num_steps
        sh.speculative_step_id = self.step_id
        sh.is_dspark_draft = False
        sh._early_verify_metadata_ids = set()
        sh.tail_forward_metadata = None
        self.shim = sh

    def init_forward_metadata_in_graph(self, fb) -> None:
        if not UNIFIED_RESOLVER:
            # 0.5.12 stamps no SWA write location (its store translates out_cache_loc); keep
            # the modelled Raw upgrade only.
            if isinstance(self.forward_metadata, RawDecodeMetadata):
                self.forward_metadata = self.upgrade_raw(self.forward_metadata)
            return
        md = self.forward_metadata
        if isinstance(md, RawDecodeMetadata):
            md = self.forward_metadata = self.upgrade_raw(md)
        if isinstance(md, AttnMetadata):
            self.shim.forward_metadata = _backend_mod.DSV4Metadata(
                core_attn_metadata=_CoreView(md.core_attn_metadata), indexer_metadata=None)
        else:
            self.shim.forward_metadata = md
        RealBackend.init_forward_metadata_in_graph(self.shim, real_batch(fb))
        if self.ring is not None and isinstance(md, AttnMetadata) and fb.out_cache_loc is not None:
            registry.hook("sglang.ring_stamp")(self, md, fb)  # ring: stamped after it

    def _sink(self, local_layer: int, loc: torch.Tensor, rows: torch.Tensor) -> None:
        caches = self.pool.caches
        if not 0 <= local_layer < len(caches):
            raise IndexError(f"sglang stored into local layer {local_layer} of the "
                             f"{self.pool.name} pool, which has {len(caches)} layers")
        self.store_log.append(StoreRecord(local_layer, loc, rows.shape[0]))
        self._store(caches[local_layer], loc, rows)

    def build_out_graph_metadata(self, fb, in_capture: bool = False):
        """0.5.23's DRAFT_EXTEND bucket: the release's own out-graph prep
        (:func:`swafuzz.targets.sglang.metadata.out_graph_draft_extend`); others: the model's."""
        if _metadata is not None and _metadata.REAL_DRAFT_EXTEND and \
                GraphBucket.of(fb.forward_mode) is GraphBucket.DRAFT_EXTEND:
            return _metadata.out_graph_draft_extend(self, fb, in_capture)
        return super().build_out_graph_metadata(fb, in_capture)

    def init_forward_metadata(self, fb) -> None:
        """0.5.23, logically DRAFT_EXTEND_V2: the release's eager draft-extend builder, then its
        in-graph stamp (as its eager init does); otherwise the model's eager init."""
        if _metadata is not None and _metadata.REAL_DRAFT_EXTEND and \
                not self.skip_eager_init(fb) and logical_forward_mode(fb).is_draft_extend_v2():
            self.forward_metadata = _metadata.eager_draft_extend(self, fb)
            self.init_forward_metadata_in_graph(fb)
            return
        super().init_forward_metadata(fb)

    def store_cache(self, layer_id: int, swa_k: torch.Tensor, fb) -> None:
        self.shim.forward_metadata = self.forward_metadata
        self.pool.sink_fn = self._sink
        try:
            RealBackend.store_cache(self.shim, layer_id, swa_k, real_batch(fb))
        finally:
            self.pool.sink_fn = None


# ----------------------------------------------------------------------------- engine
class SGLangEngine(UnifiedEngine):
    """UnifiedEngine with SGLang's allocator, pool translation, store path, resolver and
    in-graph stamp (see the module docstring); everything else is the model's."""

    allocator_cls = SGLangAllocator
    pool_cls = SGLangPool

    def step_remap(self, i, s):
        """``remap``: the mapping rewritten in place and registered again with both pools
        through the release's ``register_mapping`` (its cache resets run for real)."""
        mapping = self.allocator.rebuild_mapping()
        for pool in self.mapping_consumers():
            pool.register_mapping(mapping, again=True)
        return []
    backend_cls = SGLangBackend
    #: the oracle validates this target's allocation choices instead of predicting them
    allocation = "observed"

    def __init__(self, case, impl: str = "torch", executor=None, name: str = "sglang"):
        why = TARGET.supports(case)  # the records, then what this release has (features.py)
        if why:
            raise TargetUnavailable(f"target sglang: {why}")
        super().__init__(case, impl=impl, executor=executor, name=name)

    def make_allocator(self):
        if self.cfg.swa_ring:  # the ring feature's seam (0.5.23; 0.5.12 has no ring)
            return registry.hook("sglang.ring_allocator")(self.cfg, self.device, self.target_pool)
        return self.allocator_cls(self.cfg, self.device, self.target_pool)

    @property
    def window_path_cls(self):
        """Issue 12: the release's request window, layouts and resolver (hook
        ``sglang.window_path``); on 0.5.12 it raises TargetUnavailable."""
        return registry.hook("sglang.window_path")()

    @property
    def draft_block_mixin(self):
        """Issue 12: the DSpark draft block with the release's block-row helpers
        (:mod:`features.ring_draft.sglang`); importing it on 0.5.12 raises TargetUnavailable."""
        return registry.hook("sglang.draft_block_mixin")

    def new_observation(self):
        obs = super().new_observation()
        obs.target_version = TARGET_VERSION
        return obs


# ----------------------------------------------------------------------------- metadata hooks
#: the release's draft-extend prep and per-step helper (0.5.23; see targets/sglang/metadata.py)
_metadata = None
if features.PER_STEP:
    from swafuzz.targets.sglang import metadata as _metadata  # noqa: E402  (imports this module)

    class SGLangMultiStepRunner(MultiStepDraftRunner):
        """The multi-step draft runner with the release's per-step write-target layout."""

        per_step_loc = staticmethod(_metadata.per_step_loc)

    SGLangEngine.per_step_loc = staticmethod(_metadata.per_step_loc)
    SGLangEngine.multistep_runner_cls = SGLangMultiStepRunner
