"""The radix cache's server-level rules (plain Python): the record's config refusal (takes a
server-level Case's ``ServerConfig``; the reason is in the record) and its release refusal."""

from __future__ import annotations

import importlib
import importlib.util


def not_driven_with(c) -> bool:
    """The radix cache on beside a path the tree pipeline does not drive yet: speculative
    decoding, attention TP / DP ranks, the request window (decode graphs are driven: the tree
    pipeline's forwards go through the base pipeline's graph runner)."""
    return not c.disable_radix_cache and (
        c.speculative_algorithm is not None or c.tp_size > 1 or c.enable_dp_attention
        or c.enable_encoder_swa_bounded_replay or c.enable_decoder_swa_bounded_replay)


def refusal(config: dict, version: str) -> str | None:
    """Why a Case with the radix cache on is not run on this release, or None: the pipeline
    drives the release's unified radix cache (``mem_cache.unified_cache``: FULL and SWA
    components) and publishes a request's KV as its scheduler does, through
    ``checkpoint_kv_cache`` (0.5.22 on) or ``maybe_cache_unfinished_req`` (before); 0.5.12's
    ``SWARadixCache`` is not driven."""
    if config.get("disable_radix_cache", True):
        return None
    common = importlib.import_module("sglang.srt.mem_cache.common")
    unified = importlib.util.find_spec("sglang.srt.mem_cache.unified_cache") is not None
    publish = any(hasattr(common, f) for f in ("checkpoint_kv_cache", "maybe_cache_unfinished_req"))
    if not (unified and publish):
        return (f"config.disable_radix_cache: sglang {version} has no unified radix cache "
                "(mem_cache.unified_cache) with a prefill publish the server level drives "
                "(checkpoint_kv_cache or maybe_cache_unfinished_req); its SWARadixCache is not "
                "driven (allowed: true)")
    try:
        base = importlib.import_module("sglang.srt.mem_cache.allocator.base")
    except ImportError:  # no allocator package: nothing that lists free pages either
        base = None
    if not hasattr(getattr(base, "BaseTokenToKVPoolAllocator", None), "get_all_free_pages"):
        return (f"config.disable_radix_cache: sglang {version}'s allocators do not list their "
                "free pages (get_all_free_pages), which the radix judge reads after "
                "every forward (allowed: true)")
    return None
