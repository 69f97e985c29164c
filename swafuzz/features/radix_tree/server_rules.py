"""The radix cache's server-level rules (plain Python): the record's config refusal (takes a
server-level Case's ``ServerConfig``; the reason is in the record) and its release refusal."""

from __future__ import annotations

import importlib


def not_driven_with(c) -> bool:
    """The radix cache on beside a path the tree pipeline does not drive yet: speculative
    decoding, attention TP / DP ranks, the request window (decode graphs are driven: the tree
    pipeline's forwards go through the base pipeline's graph runner)."""
    return not c.disable_radix_cache and (
        c.speculative_algorithm is not None or c.tp_size > 1 or c.enable_dp_attention
        or c.enable_encoder_swa_bounded_replay or c.enable_decoder_swa_bounded_replay)


def refusal(config: dict, version: str) -> str | None:
    """Why a Case with the radix cache on is not run on this release, or None: the pipeline
    publishes a request's KV through the release's ``checkpoint_kv_cache`` /
    ``release_kv_cache(checkpoint=...)`` (0.5.22, 0.5.23); 0.5.12 publishes through the tree's
    own ``cache_unfinished_req`` / ``cache_finished_req``, not driven."""
    if config.get("disable_radix_cache", True):
        return None
    common = importlib.import_module("sglang.srt.mem_cache.common")
    if not hasattr(common, "checkpoint_kv_cache"):
        return (f"config.disable_radix_cache: sglang {version} publishes a request's KV through "
                "its tree's cache_unfinished_req / cache_finished_req (no checkpoint_kv_cache); "
                "the server level drives the radix cache on the checkpoint shape (0.5.22, "
                "0.5.23) only (allowed: true)")
    return None
