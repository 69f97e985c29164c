""":class:`SGLangEngine`: the engine with SGLang's own code swapped in as component classes
(imports SGLang; releases and the real/modelled table: :mod:`swafuzz.targets.sglang`).

* :class:`SGLangAllocator` drives ``SWATokenToKVPoolAllocator`` around the pool's DSV4 object,
  keeping the Case contract's bookkeeping; ``alloc_log`` gets ``[full slot, SWA slot]`` per
  token, which the oracle validates instead of predicting the free-list order.
* :class:`SGLangPool` keeps swafuzz's redzoned buffers (modelled) around a
  ``DeepSeekV4TokenToKVPool`` (``real``) whose ``register_mapping`` and translation (0.5.12:
  also ``cached_loc``) run; its store entry point is tapped so SGLang's locations land in
  swafuzz's buffers through the selected store kernel.
* :class:`SGLangBackend` runs ``DeepseekV4AttnBackend.store_cache`` (0.5.23: with its resolver
  and in-graph stamp) on a constructor-less instance whose ``forward_metadata`` is the harness's.

ForwardMode is matched by name.
"""

from __future__ import annotations

import torch

from swafuzz import features as registry
from swafuzz.scenarios.case import Case, PoolConfig, Step
from swafuzz.targets.backend import DSV4Backend, StoreRecord
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import GraphBucket, logical_forward_mode
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import AttnMetadata, RawDecodeMetadata
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.runners import MultiStepDraftRunner
from swafuzz.targets.sglang import features
from swafuzz.targets.sglang import metadata as release_metadata
from swafuzz.targets.sglang.allocator import SGLangAllocator
from swafuzz.targets.sglang.real import (
    STORE_PATH,
    TARGET_VERSION,
    UNIFIED_RESOLVER,
    RealBackend,
    RealPool,
    backend_mod,
    bare_backend,
    pool_mod,
    real_batch,
)
from swafuzz.targets.sglang.target import TARGET


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
    for part in registry.parts("sglang"):  # what the features' release code reads
        part.real_pool(p, owner.config)
    p.sliding_window = owner.config.window
    p.layer_transfer_counter = None
    if STORE_PATH:
        p._should_cache_swa = pool_mod.envs.SGLANG_OPT_CACHE_SWA_TRANSLATION.get()
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

    #: a cache layout's store is the release's (slot ``SGLangPart.pool_impl``)
    impl_side = "sglang"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sink_fn = None
        self.real = build_real_pool(self)

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
        self.shim = bare_backend(
            pool.real, topk=self.topk, speculative_num_steps=self.num_steps,
            speculative_step_id=self.step_id, _early_verify_metadata_ids=set(),
            tail_forward_metadata=None)

    def init_forward_metadata_in_graph(self, fb) -> None:
        md = self.forward_metadata
        if isinstance(md, RawDecodeMetadata):
            md = self.forward_metadata = self.upgrade_raw(md)
        if not UNIFIED_RESOLVER:  # 0.5.12 stamps nothing (its store translates out_cache_loc)
            return
        if isinstance(md, AttnMetadata):
            self.shim.forward_metadata = backend_mod.DSV4Metadata(
                core_attn_metadata=_CoreView(md.core_attn_metadata), indexer_metadata=None)
        else:
            self.shim.forward_metadata = md
        RealBackend.init_forward_metadata_in_graph(self.shim, real_batch(fb))
        if self.row_tables is not None and isinstance(md, AttnMetadata) \
                and fb.out_cache_loc is not None:  # rows from the tables: stamped after it
            registry.slot("sglang", "post_metadata_stamp")(self, md, fb)

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

    def reregister_mapping(self):
        """The mapping rewritten in place and registered again with both pools through the
        release's ``register_mapping`` (its cache resets run for real)."""
        mapping = self.allocator.rebuild_mapping()
        for pool in self.mapping_consumers():
            pool.register_mapping(mapping, again=True)
    backend_cls = SGLangBackend
    #: the oracle validates this target's allocation choices instead of predicting them
    allocation = "observed"

    def __init__(self, case, impl: str = "torch", executor=None, name: str = "sglang"):
        why = TARGET.supports(case)  # the records, then what this release has (features.py)
        if why:
            raise TargetUnavailable(f"target sglang: {why}")
        super().__init__(case, impl=impl, executor=executor, name=name)

    def make_allocator(self):
        if self.own_allocator:  # a feature's allocator seam (SGLangPart.allocator)
            return registry.slot("sglang", "allocator")(self.cfg, self.device, self.target_pool)
        return self.allocator_cls(self.cfg, self.device, self.target_pool)

    @property
    def step_path_cls(self):
        """The release's step path (slot ``SGLangPart.step_path``); a release without it raises
        TargetUnavailable."""
        return registry.slot("sglang", "step_path")()

    @property
    def draft_block_mixin(self):
        """The ``draft_block`` step's backend mixin with the release's helpers (slot
        ``SGLangPart.draft_block_mixin``); a release without it raises TargetUnavailable."""
        return registry.slot("sglang", "draft_block_mixin")

    def new_observation(self):
        obs = super().new_observation()
        obs.target_version = TARGET_VERSION
        return obs


# ----------------------------------------------------------------------------- metadata hooks
#: the release's draft-extend prep and per-step helper (0.5.23; see targets/sglang/metadata.py)
_metadata = release_metadata if features.PER_STEP else None
if _metadata is not None:
    class SGLangMultiStepRunner(MultiStepDraftRunner):
        """The multi-step draft runner with the release's per-step write-target layout."""

        per_step_loc = staticmethod(_metadata.per_step_loc)

    SGLangEngine.per_step_loc = staticmethod(_metadata.per_step_loc)
    SGLangEngine.multistep_runner_cls = SGLangMultiStepRunner


def probe() -> str:
    """Run one tiny Case on the adapter (SGLang imported); returns the version string. Proves
    an environment built by ``scripts/upstream-env`` works."""
    case = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=4),
                steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,))))
    obs = SGLangEngine(case, impl="torch").run()
    if obs.error is not None:
        raise RuntimeError(f"sglang probe failed: {obs.error}")
    print(f"swafuzz sglang target: {obs.target_version}: probe ok")
    return obs.target_version or ""
