"""The decode side of PD disaggregation's server-level rules (plain Python): the record's config
refusal (takes a server-level Case's ``ServerConfig``; the reason is in the record) and its
release refusal."""

from __future__ import annotations

import importlib
import inspect


def not_driven_with(c) -> bool:
    """The decode side beside a path its pipeline does not drive: another transfer backend than
    the release's fake one, speculative decoding, attention TP / DP ranks, decode graphs, the
    radix cache, the request window."""
    return c.disaggregation_mode == "decode" and (
        c.disaggregation_transfer_backend != "fake" or c.speculative_algorithm is not None
        or c.tp_size > 1 or c.enable_dp_attention or not c.disable_cuda_graph
        or not c.disable_radix_cache or c.enable_encoder_swa_bounded_replay
        or c.enable_decoder_swa_bounded_replay)


def refusal(config: dict, version: str) -> str | None:
    """Why a decode-side Case is not run on this release, or None: the pipeline drives the
    release's ``DecodePreallocQueue`` with its SWA tail pre-allocation, its fake receiver and
    its PREBUILT batch (the shape of 0.5.19 .. 0.5.23: ``_pre_alloc``, ``pop_preallocated``,
    ``alloc_extend_swa_tail``, the polls' all-reduce in ``_all_reduce_polls``)."""
    if config.get("disaggregation_mode", "null") != "decode":
        return None
    why = (f"config.disaggregation_mode: sglang {version} lacks the decode-side takeover the "
           "server level drives ({}); driven on the shape of 0.5.19 .. 0.5.23 (allowed: null)")
    try:
        decode = importlib.import_module("sglang.srt.disaggregation.decode")
        importlib.import_module("sglang.srt.disaggregation.fake")
        swa = importlib.import_module("sglang.srt.mem_cache.allocator.swa")
        utils = importlib.import_module("sglang.srt.disaggregation.utils")
    except ImportError as e:
        return why.format(e)
    q = getattr(decode, "DecodePreallocQueue", None)
    need = ("_pre_alloc", "pop_preallocated", "_swa_tail_len", "_uses_swa_tail_prealloc")
    missing = [n for n in need if not hasattr(q, n)]
    alloc = getattr(swa, "SWATokenToKVPoolAllocator", None)
    if alloc is None or not hasattr(alloc, "alloc_extend_swa_tail"):
        missing.append("SWATokenToKVPoolAllocator.alloc_extend_swa_tail")
    if not hasattr(utils, "_all_reduce_polls"):
        missing.append("disaggregation.utils._all_reduce_polls")
    if missing:
        return why.format("no " + ", ".join(missing))
    if "req_to_token_pool" not in inspect.signature(decode.alloc_for_decode_prealloc).parameters:
        return why.format("alloc_for_decode_prealloc of another shape")
    return None
