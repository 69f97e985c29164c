"""The ``sglang`` target: SGLang's own allocator, DSV4 pool translation, store path, resolver and
in-graph metadata stamp, run under the harness in place of the engine model's twins.

This package is imported only when the target is requested (``targets.get_target("sglang")``),
so swafuzz works without SGLang installed. Importing :mod:`swafuzz.targets.sglang.engine`
imports SGLang; :func:`release` only reads the installed distribution's metadata.

Supported releases: :data:`SUPPORTED` (detected at import). Another installed version (a
checkout, a newer release) is refused with a :class:`~swafuzz.targets.TargetUnavailable` that
names the supported range, unless ``SWAFUZZ_SGLANG_ADAPTER`` names the supported release whose
adapter to use for it (an explicit, recorded choice: the Observation then says
``sglang <version> (adapter <release>)``).

What runs real and what stays modelled, per release: :data:`TABLE` (printed by
``swafuzz list --target sglang``).
"""

from __future__ import annotations

import os

from swafuzz.targets import TargetUnavailable

#: Releases with an adapter, oldest first. 0.5.12: the pool's layer-keyed cached translation
#: (``cached_loc``) on the store path; 0.5.23: the unified resolver ``get_swa_out_cache_loc``
#: and the in-graph ``swa_out_cache_loc`` stamp.
SUPPORTED = ("0.5.12", "0.5.23")
ADAPTER_ENV = "SWAFUZZ_SGLANG_ADAPTER"

#: (component, 0.5.12, 0.5.23, why). "real": SGLang's code executes; "modelled": swafuzz's
#: engine model runs it; "absent": the release has no such code on the SWA write path.
TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("ForwardMode", "real", "real",
     "the release's member of the same name is handed to its code (values differ)"),
    ("allocator (alloc, alloc_extend, alloc_decode, free, free_swa, free_full)", "real", "real",
     "SWATokenToKVPoolAllocator on CPU tensors, built around the DSV4 pool it registers M "
     "into. Page size > 1: 0.5.23 on CPU selects its own torch reference allocators "
     "(alloc_extend_naive / alloc_decode_naive); 0.5.12 has Triton kernels only, which fail "
     "in the interpreter, so its alloc_extend_naive replaces alloc_extend_kernel and decodes "
     "go through alloc_extend (0.5.12 has no naive alloc_decode); free_full is 0.5.23 only"),
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
     "IDLE / request-window / late-layer-tail / cached / fresh-translation branches; this "
     "harness builds no request window or tail (issue 12)"),
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
    ("graph runners, DP padding", "modelled", "modelled",
     "decode/verify, draft-extend and multi-step runners need a model runner; swafuzz's run "
     "under tape (CPU) or CUDA graphs"),
    ("SWA KV buffers", "modelled", "modelled",
     "swafuzz's redzoned [pages+1, P, row] buffers; the release's 584-byte fp8/bf16/scale "
     "layout is not built"),
    ("store kernel", "modelled", "modelled",
     "swafuzz's store writes the rows at exactly the locations SGLang's code hands its pool's "
     "store; SGLang's CUDA JIT store needs a GPU, its Triton flashmla store quantizes to fp8 "
     "(needs a reference quantizer, not built)"),
    ("draft-extend metadata prep (out-graph bucket, eager)",
     "modelled", "real",
     "0.5.23 (targets/sglang/metadata.py): the release's init_forward_metadata_out_graph for the "
     "bucket (no locations at capture, IDLE substitution, 0-padding to the bucket's rows) and "
     "its init_forward_metadata_draft_extend with _fill_cuda_graph_swa_out_cache_loc (PR "
     "#34890: buffer refilled, tail zeroed) or the eager-miss translation; eager: the same "
     "builder, then the real in-graph stamp. Adapter seams: make_core_attn_metadata returns the "
     "harness's core metadata around the release's out_loc (page table and SWA page indices "
     "are read-side, not built), no c128 MTP state, the bucket's persistent metadata kept by "
     "the harness (same check/copy/assign rules). As driven here the release never stores "
     "through that buffer: capture hands the prep no locations and eager re-stamps"),
    ("multi-step draft per-step write targets", "modelled", "real",
     "0.5.23: sglang.srt.speculative.eagle_utils.per_step_draft_out_cache_loc gives the "
     "engine's per-step locations (the EAGLE worker's side, eager and graph) as it gives the "
     "backend's in-graph stamp; 0.5.12 has no such helper (its store translates whatever "
     "out_cache_loc the worker hands it): the model's layout"),
)


def installed_version() -> str | None:
    """The installed ``sglang`` distribution's version, or None (does not import sglang)."""
    from importlib import metadata

    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        return None


def release() -> tuple[str, str]:
    """``(installed version, adapter release)``; raises :class:`TargetUnavailable` naming the
    supported range when sglang is missing or unsupported."""
    v = installed_version()
    supported = ", ".join(SUPPORTED)
    if v is None:
        raise TargetUnavailable(
            "target sglang: the sglang package is not installed (supported releases: "
            f"{supported}); install one with scripts/upstream-env VERSION or "
            "`pip install swafuzz[sglang]`")
    if v in SUPPORTED:
        return v, v
    forced = os.environ.get(ADAPTER_ENV)
    if forced:
        if forced not in SUPPORTED:
            raise TargetUnavailable(
                f"{ADAPTER_ENV}={forced!r}: not a supported release; choose one of: {supported}")
        return v, forced
    raise TargetUnavailable(
        f"target sglang: installed sglang {v} is not a supported release (supported: "
        f"{supported}); set {ADAPTER_ENV} to one of them to drive it with that release's adapter")


def table_text(width: int = 100) -> str:
    """The real/modelled/why table as plain text (``why`` wrapped under each row)."""
    import textwrap

    w0 = max(len(r[0]) for r in TABLE)
    lines = [f"{'component':<{w0}}  0.5.12    0.5.23", "-" * (w0 + 20)]
    for c, a, b, why in TABLE:
        lines.append(f"{c:<{w0}}  {a:<8}  {b}")
        lines += textwrap.wrap(why, width, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


def probe() -> str:
    """Import the adapter (and SGLang) and run one tiny Case; returns the version string.
    Used by ``scripts/upstream-env`` to prove an environment works."""
    from swafuzz.scenarios.case import Case, PoolConfig, Step
    from swafuzz.targets.sglang.engine import SGLangEngine

    case = Case(pool=PoolConfig(page_size=2, full_pages=4, swa_pages=4),
                steps=(Step("admit", rid=0, length=3), Step("decode", rids=(0,))))
    obs = SGLangEngine(case, impl="torch").run()
    if obs.error is not None:
        raise RuntimeError(f"sglang probe failed: {obs.error}")
    print(f"swafuzz sglang target: {obs.target_version}: probe ok")
    return obs.target_version or ""
