"""The ``sglang`` target: SGLang's own allocator, DSV4 pool translation, store path, resolver and
in-graph metadata stamp, run under the harness in place of the engine model's twins.

Imported only when requested (swafuzz works without SGLang); :mod:`.engine` imports SGLang,
:func:`release` only reads the installed distribution's metadata. Supported: :data:`SUPPORTED_RANGE`
(both ends included). The adapter is chosen by feature, not version: :mod:`.features` picks the
family (0.5.12-style store-path ``cached_loc`` or 0.5.13+ resolver ``get_swa_out_cache_loc``)
and each seam, refusing what is missing with :class:`~swafuzz.targets.TargetUnavailable`.
:data:`VERIFIED`: the releases ``scripts/upstream-matrix`` checked (records in :mod:`.detected`,
labelled by :func:`label`). A release outside the range is refused (exit 2) unless
``SWAFUZZ_SGLANG_ADAPTER`` names the in-range release whose records answer for it.

What runs real vs modelled: :data:`TABLE` (``swafuzz list --target sglang``); which kinds run
where: each feature record's ``since["sglang"]`` via the ``supports`` hook (:mod:`.target`).
"""

from __future__ import annotations

import importlib.metadata
import os
import re

from swafuzz.features.sglang_facts import facts
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.detected import DETECTED

#: The releases the target accepts without ``SWAFUZZ_SGLANG_ADAPTER``: every version from the
#: first to the last, inclusive (compared numerically on the first three components).
SUPPORTED_RANGE = ("0.5.12", "0.5.23")
ADAPTER_ENV = "SWAFUZZ_SGLANG_ADAPTER"

#: (component, 0.5.12, 0.5.23, why): "real" (SGLang's code runs), "modelled" (the engine
#: model's), "absent" (no such code on the SWA path), "refused" (matrix answers only: the
#: adapter does not drive that form). Cross-feature rows here; each feature's follow from its
#: ``sglang_facts.py`` (hook ``sglang.facts``), in registry order.
CORE_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("ForwardMode", "real", "real",
     "the release's member of the same name is handed to its code (values differ)"),
    ("allocator (alloc, alloc_extend, alloc_decode, free, free_swa, free_full)", "real", "real",
     "SWATokenToKVPoolAllocator on CPU tensors, built around the DSV4 pool it registers M "
     "into. Page size > 1: 0.5.23 on CPU selects its own torch reference allocators "
     "(alloc_extend_naive / alloc_decode_naive); 0.5.12 has Triton kernels only, which fail "
     "in the interpreter, so its alloc_extend_naive replaces alloc_extend_kernel and decodes "
     "go through alloc_extend (0.5.12 has no naive alloc_decode); free_full is 0.5.23 only"),
    ("window eviction (evict step)", "real", "real",
     "0.5.23 (any release with mem_cache.common.free_swa_out_of_window_slots, "
     "free_swa_segment and ReqKvInfo): the scheduler's trigger ScheduleBatch."
     "_swa_eviction_trigger, then free_swa_out_of_window_slots (chunk-cache threshold "
     "pre_len - window, interval 1, a shared prefix as cache_protected_len) in a free group, "
     "freeing through free_swa_segment, over the release's ReqToTokenPool (row contents "
     "written from the request's slots: modelled); 0.5.12: free_swa of tokens[evicted:"
     "frontier], what its ScheduleBatch._evict_swa calls (its frontier keeps one page more; "
     "the Case's frontier is the chunk-cache rule)"),
    ("full->SWA mapping M", "real", "real",
     "the allocator's int64 tensor with its -1 sentinel; target and draft pools register it"),
    ("DSV4 pool: register_mapping, translation", "real", "real",
     "DeepSeekV4TokenToKVPool methods on an instance built without __init__ (the constructor "
     "needs server-global state and allocates compressed, indexer and state pools)"),
    ("DSV4 pool: layer-keyed cached_loc", "real", "absent",
     "0.5.12 set_swa_key_buffer_radix_fused: recomputed at the pool's start_layer"),
    ("backend store_cache", "real", "real",
     "DeepseekV4AttnBackend.store_cache on an instance built without __init__"),
    ("resolver get_swa_out_cache_loc", "absent", "real",
     "IDLE / window / late-layer tail / cached / fresh-translation branches (J, I, W, T, C, "
     "F), all reached: the window and tail Cases (issue 12, the window feature's sglang seam) "
     "drive I (activate_idle), W and T through the release's store_cache"),
    ("in-graph stamp (init_forward_metadata_in_graph)", "absent", "real",
     "stamps swa_out_cache_loc (multi-step per-step slice included) into the harness's "
     "metadata through a DSV4Metadata view with no compressed layers; 0.5.12's store reads "
     "out_cache_loc instead"),
    ("eager / out-graph metadata init, copy/assign (other modes)",
     "modelled", "modelled",
     "the real builders make page tables, compression/indexer metadata and FlashMLA plans that "
     "need CUDA, a req_to_token table and page sizes that are multiples of 128; the engine "
     "model runs them (spec §4.2-§4.4). 0.5.23's draft-extend prep is real (see the rows "
     "below); 0.5.12's draft-extend builder is its prefill builder, whose metadata carries no "
     "SWA write location (its store_cache translates forward_batch.out_cache_loc)"),
    ("SWA KV buffers", "modelled", "modelled",
     "swafuzz's redzoned buffers: opaque [pages+1, P, row] rows (pool layout \"rows\"), or, "
     "with pool layout \"dsv4\", the release's V4 page layout ([pages+1, ceil(584*P/576)*576] "
     "uint8: 576-byte fp8/bf16 data rows, then 8-byte UE8M0 scale groups, then canary pads), "
     "built by swafuzz with the pool's geometry (the release's constructor needs server state)"),
    ("store kernel", "modelled", "modelled",
     "pool layout \"rows\": swafuzz's store writes the rows at exactly the locations SGLang's "
     "code hands its pool's store (SGLang's CUDA JIT store needs a GPU)"),
    ("multi-step draft per-step write targets", "modelled", "real",
     "0.5.23: sglang.srt.speculative.eagle_utils.per_step_draft_out_cache_loc gives the "
     "engine's per-step locations (the EAGLE worker's side, eager and graph) as it gives the "
     "backend's in-graph stamp; 0.5.12 has no such helper (its store translates whatever "
     "out_cache_loc the worker hands it): the model's layout"),
)
TABLE: tuple[tuple[str, str, str, str], ...] = CORE_TABLE + tuple(
    row for f in facts() for row in f.table)


def version_key(v: str) -> tuple[int, int, int]:
    """``"0.5.21"`` -> ``(0, 5, 21)``: the first three numeric components of a version string
    (``0.5.21.post1``, ``0.5.22rc1``, ``0.5.23.dev3+g1234`` count as their release); raises
    ValueError when it has fewer than three."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", v.strip())
    if m is None:
        raise ValueError(f"not a release version: {v!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def in_range(v: str) -> bool:
    """Whether version ``v`` lies in :data:`SUPPORTED_RANGE` (unparseable: False)."""
    try:
        k = version_key(v)
    except ValueError:
        return False
    return version_key(SUPPORTED_RANGE[0]) <= k <= version_key(SUPPORTED_RANGE[1])


#: Releases verified (adapter tests and a campaign passed in their environment, as
#: ``scripts/upstream-matrix`` recorded it in :mod:`~swafuzz.targets.sglang.detected`), oldest
#: first.
VERIFIED = tuple(sorted((v for v, r in DETECTED.items() if r.get("check") == "passed"),
                        key=lambda v: (version_key(v), v)))
#: kept for callers that listed the adapters: the verified releases
SUPPORTED = VERIFIED


def family_of(v: str) -> str | None:
    """The family (``"store-path"`` / ``"resolver"``) the records (:mod:`.detected`) hold for
    release ``v`` (an unrecorded post-release: its release's), or None. Reads no SGLang."""
    rec = DETECTED.get(v) or DETECTED.get(v.split(".post")[0]) or {}
    return rec.get("family")


def label(v: str, adapter: str | None = None) -> str:
    """What a record says ran: ``0.5.13 (resolver family)``, ``0.5.24 (adapter 0.5.23, resolver
    family)`` (forced), ``0.5.13 (family not recorded)`` (no probe recorded)."""
    fam = family_of(adapter or v)
    what = f"{fam} family" if fam else "family not recorded"
    return f"{v} ({'' if adapter in (None, v) else f'adapter {adapter}, '}{what})"


def installed_version() -> str | None:
    """The installed ``sglang`` distribution's version, or None (does not import sglang)."""
    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        return None


def release() -> tuple[str, str]:
    """``(installed version, adapter release)``: the installed one inside
    :data:`SUPPORTED_RANGE` (post-releases included), else ``SWAFUZZ_SGLANG_ADAPTER``'s.
    :class:`TargetUnavailable` naming the range if sglang is missing or out of range unforced."""
    v = installed_version()
    rng = f"{SUPPORTED_RANGE[0]} .. {SUPPORTED_RANGE[1]}"
    if v is None:
        raise TargetUnavailable(
            "target sglang: the sglang package is not installed (supported releases: "
            f"{rng}, post-releases included); install one with scripts/upstream-env VERSION or "
            "`pip install swafuzz[sglang]`")
    if in_range(v):
        return v, v
    forced = os.environ.get(ADAPTER_ENV)
    if forced:
        if not in_range(forced):
            raise TargetUnavailable(
                f"{ADAPTER_ENV}={forced!r}: not a release of the supported range {rng}")
        return v, forced
    raise TargetUnavailable(
        f"target sglang: installed sglang {v} is outside the supported range {rng}; set "
        f"{ADAPTER_ENV} to a release of the range whose records should answer for it (features "
        "are still detected)")
