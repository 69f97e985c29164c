"""What the installed SGLang release has on the SWA write path, found by inspection (module
paths, attributes, signatures), not by its version number.

Imports SGLang. Every seam of the ``sglang`` target asks these flags rather than release
strings, so a release between verified ones runs with what it has and one lacking a needed
piece is refused with a :class:`~swafuzz.targets.TargetUnavailable` naming it. Family
(:data:`FAMILY`): ``"store-path"`` (0.5.12: no resolver; the pool's
``set_swa_key_buffer_radix_fused`` translates ``out_cache_loc`` through its layer-keyed
``cached_loc``) or ``"resolver"`` (0.5.13+, addendum §3: ``get_swa_out_cache_loc`` chooses,
the pool only stores). :func:`describe` lists the flags (``swafuzz list --target sglang``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

from swafuzz.features.sglang_facts import facts
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang import release

VERSION, ADAPTER = release()

# pin the fused store path (whose locations matter) before any release module is imported
os.environ.setdefault("SGLANG_OPT_USE_FUSED_STORE_CACHE", "1")


def first_module(*names: str):
    """The first of ``names`` that imports (None when none does); an ImportError raised
    *inside* an existing module propagates (a broken environment, not a missing feature)."""
    for n in names:
        try:
            return importlib.import_module(n)
        except ModuleNotFoundError as e:
            if e.name is not None and not n.startswith(e.name) and not e.name.startswith(n):
                raise
    return None


def _refuse(what: str) -> TargetUnavailable:
    return TargetUnavailable(f"target sglang: sglang {VERSION} lacks {what}; this adapter "
                             "cannot drive it")


def source_has(obj, text: str) -> bool:
    try:
        return text in inspect.getsource(obj)
    except (OSError, TypeError):
        return False


def _params(fn) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


try:
    backend_mod = importlib.import_module("sglang.srt.layers.attention.deepseek_v4_backend")
    pool_mod = importlib.import_module("sglang.srt.mem_cache.deepseek_v4_memory_pool")
    _fbi = importlib.import_module("sglang.srt.model_executor.forward_batch_info")
except ImportError as e:  # pragma: no cover - depends on the environment
    raise TargetUnavailable(
        f"target sglang: sglang {VERSION} is installed but its DSV4 modules do not import here "
        f"({type(e).__name__}: {e}); `python -m swafuzz.targets.sglang.detect` names the file "
        "that imported it and what to do") from e

RealBackend = getattr(backend_mod, "DeepseekV4AttnBackend", None)
RealPool = getattr(pool_mod, "DeepSeekV4TokenToKVPool", None)
RealForwardMode = getattr(_fbi, "ForwardMode", None)
if RealBackend is None or RealPool is None or RealForwardMode is None:  # pragma: no cover
    raise _refuse("DeepseekV4AttnBackend / DeepSeekV4TokenToKVPool / ForwardMode")
for _name in ("store_cache",):
    if not hasattr(RealBackend, _name):  # pragma: no cover
        raise _refuse(f"DeepseekV4AttnBackend.{_name}")
for _name in ("register_mapping", "translate_loc_from_full_to_swa",
              "set_swa_key_buffer_radix_fused", "_swa_local_layer_id"):
    if not hasattr(RealPool, _name):  # pragma: no cover
        raise _refuse(f"DeepSeekV4TokenToKVPool.{_name}")

#: the SWA allocator's module: ``mem_cache/allocator/swa.py`` (0.5.13+) or
#: ``mem_cache/swa_memory_pool.py`` (0.5.12)
alloc_mod = first_module("sglang.srt.mem_cache.allocator.swa")
if alloc_mod is None or not hasattr(alloc_mod, "SWATokenToKVPoolAllocator"):
    alloc_mod = first_module("sglang.srt.mem_cache.swa_memory_pool")
SWATokenToKVPoolAllocator = getattr(alloc_mod, "SWATokenToKVPoolAllocator", None)
if SWATokenToKVPoolAllocator is None:  # pragma: no cover
    raise _refuse("SWATokenToKVPoolAllocator (looked in mem_cache.allocator.swa and "
                  "mem_cache.swa_memory_pool)")
#: the paged allocator's module: ``mem_cache/allocator/paged.py`` or ``mem_cache/allocator.py``
paged_mod = first_module("sglang.srt.mem_cache.allocator.paged", "sglang.srt.mem_cache.allocator")

#: the resolver ``get_swa_out_cache_loc`` (addendum §3): the resolver adapter family
RESOLVER = hasattr(RealBackend, "get_swa_out_cache_loc")
#: 0.5.12's layer-keyed cached translation inside the pool's fused store entry point
CACHED_LOC = source_has(RealPool.set_swa_key_buffer_radix_fused, "cached_loc")
if RESOLVER:
    FAMILY = "resolver"
elif CACHED_LOC:
    FAMILY = "store-path"
else:  # pragma: no cover - no such release known
    raise _refuse("both a resolver (DeepseekV4AttnBackend.get_swa_out_cache_loc) and the "
                  "store path's layer-keyed cached_loc")

#: the in-graph stamp ``init_forward_metadata_in_graph`` (resolver family)
IN_GRAPH = hasattr(RealBackend, "init_forward_metadata_in_graph")
#: the paged allocator's CPU switch (``use_triton_kernels``, 0.5.23); without it
#: ``alloc_extend_kernel`` is routed to ``alloc_extend_naive``, decodes to ``alloc_extend``
NAIVE_SWITCH = source_has(paged_mod, "use_triton_kernels")
EXTEND_NAIVE = hasattr(paged_mod, "alloc_extend_naive") and hasattr(paged_mod, "alloc_extend_kernel")
if not NAIVE_SWITCH and not EXTEND_NAIVE:  # pragma: no cover
    raise _refuse("a CPU path for the paged allocator (use_triton_kernels switch or "
                  "alloc_extend_naive)")
#: ``SWATokenToKVPoolAllocator.free_full`` (0.5.20+): its ``free`` then insists on SWA peers
FREE_FULL = hasattr(SWATokenToKVPoolAllocator, "free_full")
#: 0.5.22+ segment eviction (``free_swa_out_of_window_slots`` with ``eviction_interval``,
#: ``free_swa_segment``, ``ReqKvInfo``), which ``evict`` frees through; else ``free_swa``
common_mod = first_module("sglang.srt.mem_cache.common")
_batch_mod = first_module("sglang.srt.managers.schedule_batch")
ReqKvInfo = getattr(_batch_mod, "ReqKvInfo", None)
SEGMENT_EVICT = (hasattr(common_mod, "free_swa_out_of_window_slots")
                 and hasattr(SWATokenToKVPoolAllocator, "free_swa_segment")
                 and ReqKvInfo is not None and hasattr(ReqKvInfo, "swa_dead_lo")
                 and {"eviction_interval", "supports_prefix_sharing"} <= set(
                     _params(getattr(common_mod, "free_swa_out_of_window_slots", None))))
#: ``ScheduleBatch._swa_eviction_trigger`` (0.5.22+), asked before a segment eviction
EVICTION_TRIGGER = getattr(getattr(_batch_mod, "ScheduleBatch", None), "_swa_eviction_trigger",
                           None) if SEGMENT_EVICT else None
#: ``ForwardMode.DRAFT_EXTEND`` (0.5.12, 0.5.13; removed in 0.5.14)
HAS_DRAFT_EXTEND_MODE = "DRAFT_EXTEND" in RealForwardMode.__members__

_eagle = first_module("sglang.srt.speculative.eagle_utils")
#: ``eagle_utils.per_step_draft_out_cache_loc``: the per-step draft write targets
PER_STEP = RESOLVER and hasattr(_eagle, "per_step_draft_out_cache_loc")
#: the draft-extend prep with its buffer refill (PR #34890) and the signature the adapter
#: calls (0.5.16+)
DRAFT_EXTEND_PREP = (RESOLVER and hasattr(RealBackend, "_fill_cuda_graph_swa_out_cache_loc")
                     and hasattr(RealBackend, "init_forward_metadata_out_graph")
                     and _params(getattr(RealBackend, "init_forward_metadata_draft_extend",
                                         None))[1:5] == ("req_pool_indices", "seq_lens",
                                                         "num_tokens_per_req", "out_cache_loc"))

#: the module of the release's Triton V4-layout fused store (``kernels.ops.kvcache``, 0.5.20+;
#: ``jit_kernel``, earlier resolver releases); None: the quantizer + SetKAndS pair (0.5.12)
STORE_MODULE = next((n for n in ("sglang.kernels.ops.kvcache.triton_store_cache",
                                 "sglang.jit_kernel.triton_store_cache")
                     if hasattr(first_module(n), "triton_fused_store_flashmla")), None)

#: each feature's probe (its ``sglang_facts.py``, hook ``sglang.facts``), in registry order:
#: what it finds becomes a name of this module (a later probe reads an earlier one's)
FACTS = facts()
for _facts in FACTS:
    if _facts.probe is not None:
        globals().update(_facts.probe(sys.modules[__name__]))


def case_missing(case) -> str | None:
    """What ``case`` needs that the installed release lacks, by inspection (None: nothing), asked
    after the records said yes; each feature's facts answer for its own fields, in registry order."""
    here = sys.modules[__name__]
    for f in FACTS:
        why = f.refusal(case, here) if f.refusal is not None else None
        if why:
            return why
    return None


def describe() -> list[tuple[str, str]]:
    """``(what, what was found)`` rows for the installed release: the core's, then each
    feature's (its facts' ``describe``)."""
    yes = {True: "yes", False: "no"}
    rows = [
        ("adapter family", FAMILY),
        ("SWA allocator module", alloc_mod.__name__),
        ("paged allocator module", paged_mod.__name__),
        ("paged allocator CPU switch (use_triton_kernels)", yes[NAIVE_SWITCH]),
        ("SWATokenToKVPoolAllocator.free_full", yes[FREE_FULL]),
        ("window eviction", "free_swa_out_of_window_slots -> free_swa_segment"
         + (" (trigger _swa_eviction_trigger)" if EVICTION_TRIGGER else "")
         if SEGMENT_EVICT else "free_swa (the scheduler's _evict_swa frees through it)"),
        ("resolver get_swa_out_cache_loc", yes[RESOLVER]),
        ("in-graph stamp init_forward_metadata_in_graph", yes[IN_GRAPH]),
        ("per_step_draft_out_cache_loc", yes[PER_STEP]),
        ("draft-extend prep (_fill_cuda_graph_swa_out_cache_loc)", yes[DRAFT_EXTEND_PREP]),
        ("ForwardMode.DRAFT_EXTEND", yes[HAS_DRAFT_EXTEND_MODE]),
        ("V4 fused store module", STORE_MODULE or "none (quantizer + SetKAndS)"),
    ]
    here = sys.modules[__name__]
    for f in FACTS:
        if f.describe is not None:
            rows += f.describe(here)
    return rows
