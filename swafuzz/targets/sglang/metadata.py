"""SGLang's draft-extend metadata prep (0.5.23) and per-step draft location helper, driven on
CPU tensors for :class:`~swafuzz.targets.sglang.engine.SGLangBackend` (imports SGLang).

Real, on the backend's shim (a ``DeepseekV4AttnBackend`` built without ``__init__``):
``init_forward_metadata_out_graph`` for the DRAFT_EXTEND bucket (no synthetic locations, IDLE
substitution, 0-padding to ``draft_extend_num_tokens_per_req * bs`` rows), then
``init_forward_metadata_draft_extend`` (PR #34890: the int32 SWA buffer refilled out of graph by
``_fill_cuda_graph_swa_out_cache_loc`` - ``int32(M[loc])`` in front, zeros after, the ``[:n]``
view stamped as ``swa_out_cache_loc`` - or the eager-miss translation when the buffer is absent
or too small; eager DRAFT_EXTEND_V2 uses ``speculative_num_draft_tokens`` rows per request, then
the in-graph stamp); ``per_step_draft_out_cache_loc`` (``speculative.eagle_utils``).

Replaced on the shim (reasons: ``TABLE`` in :mod:`swafuzz.targets.sglang`):
``make_core_attn_metadata`` returns :class:`CoreAttnMetadata` with the release's locations and
causal ``seq_lens``; ``online_c128_mtp.prepare_forward`` is a no-op;
``replay_cuda_graph_metadata_from`` hands the metadata back (the harness keeps the bucket's
with ``DSV4AttnMetadata.copy_`` rules). 0.5.12 has none of this on the SWA write path: the
model's prep runs there.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from swafuzz.targets.forward_mode import ForwardBatch, GraphBucket
from swafuzz.targets.metadata import AttnMetadata, CoreAttnMetadata
from swafuzz.targets.sglang import features
from swafuzz.targets.sglang.real import RealBackend, real_mode

#: the release runs its own draft-extend prep (feature-detected: the buffer refill
#: ``_fill_cuda_graph_swa_out_cache_loc``, the out-graph init and the 0.5.16+ signature of
#: ``init_forward_metadata_draft_extend``; see targets/sglang/features.py)
REAL_DRAFT_EXTEND = features.DRAFT_EXTEND_PREP and hasattr(RealBackend, "init_forward_metadata_draft_extend")

if features.PER_STEP:
    from sglang.srt.speculative.eagle_utils import (
        per_step_draft_out_cache_loc as _real_per_step,
    )
else:  # pragma: no cover - depends on the installed release
    _real_per_step = None


def per_step_loc(loc: torch.Tensor, bs: int, topk: int, steps: int) -> torch.Tensor:
    """``[steps, bs*topk]`` per-step write targets of a multi-step draft decode, from the
    release's ``per_step_draft_out_cache_loc`` (0.5.23); ``loc`` int64 ``[bs*topk*steps]``."""
    return _real_per_step(loc, bs, topk, steps)


class NoC128MTP:
    """The shim's ``online_c128_mtp``: this harness builds no compressed (c128) layers."""

    def prepare_forward(self, *args, **kwargs):
        return None

    def clear(self) -> None:
        return None

    def enabled(self) -> bool:  # the target-verify prep asks (no online c128 MTP state)
        return False


def prepare_shim(backend) -> None:
    """Give ``backend.shim`` the attributes the release's draft-extend prep reads (once)."""
    sh = backend.shim
    if getattr(sh, "_swafuzz_draft_extend", False):
        return
    dev = backend.pool.device
    sh.cuda_int32_kwargs = {"dtype": torch.int32, "device": dev}
    sh.trtllm_attn = False
    sh.needs_cpu_seq_lens = False
    sh.req_to_token = None  # read only by make_core_attn_metadata, which the adapter replaces
    sh.page_size = backend.page_size
    # the longest context (req_to_token's width upstream); read against CPU lengths only, and
    # this adapter hands the prep none
    cfg = backend.pool.config
    sh.MAX_SEQ_LEN_FOR_CAPTURE = cfg.full_pages * cfg.page_size
    sh.online_c128_mtp = NoC128MTP()
    # PR #34890's draft-runner buffer (None: the Case builds no buffer; the release then takes
    # its eager-miss translation)
    sh.cuda_graph_swa_out_cache_loc = backend.swa_loc_buffer
    sh.draft_extend_num_tokens_per_req = backend.draft_extend_tokens_per_bs
    sh.speculative_num_draft_tokens = backend.draft_extend_tokens_per_bs
    sh._swafuzz_draft_extend = True


def request_lens(seq_lens_casual: torch.Tensor, requests: int) -> torch.Tensor:
    """Per-request lengths of the release's per-row causal lengths: ``seq_lens_casual`` int
    ``[requests * q]`` (``expand_extend_with_same_length``: ``q`` rows per request, the request's
    length on its last row) -> int64 ``[requests]``, each request's last row. The grouping is the
    batch the adapter handed the prep (``requests``), not the release's ``num_groups`` argument
    (0.5.21+ pass it for the request window's layout, 0.5.18 .. 0.5.20 do not; the rows are
    grouped the same way: SEMANTICS.md of draft_extend_buffer). Rows that do not divide
    into ``requests`` groups come back unreduced (int64 ``[rows]``), for the ``prepared`` check
    to report."""
    rows = seq_lens_casual.numel()
    if requests <= 0 or rows % requests:
        return seq_lens_casual.flatten().to(torch.int64)
    return seq_lens_casual.view(requests, -1)[:, -1].to(torch.int64)


def _core_builder(page_size: int, positions: torch.Tensor, requests: int):
    """The shim's ``make_core_attn_metadata``: the harness's core metadata around the release's
    chosen ``out_loc``; ``positions`` int64 ``[rows]`` is the batch's (modelled); ``requests``:
    the number of requests the prep was handed (:func:`request_lens`)."""

    def make_core_attn_metadata(*, seq_lens_casual, out_loc, **_):
        return CoreAttnMetadata(page_size=page_size, raw_out_loc=out_loc,
                                seq_lens=request_lens(seq_lens_casual, requests),
                                positions=positions)

    return make_core_attn_metadata


def _as_attn_metadata(md) -> AttnMetadata:
    """The release's ``DSV4Metadata`` around the harness core -> the harness's holder."""
    core = md.core_attn_metadata
    if not isinstance(core, CoreAttnMetadata):
        raise TypeError(f"sglang draft-extend prep returned {type(core).__name__}, not the "
                        "adapter's core metadata")
    return AttnMetadata(core_attn_metadata=core)


def _batch(fb: ForwardBatch, in_capture: bool) -> SimpleNamespace:
    """The forward batch as the release's out-graph prep reads it (the release's modes)."""
    bs = fb.batch_size
    actual = fb.forward_mode if in_capture else (fb.actual_forward_mode or fb.forward_mode)
    return SimpleNamespace(
        forward_mode=real_mode(fb.forward_mode.name), actual_forward_mode=real_mode(actual.name),
        batch_size=bs, req_pool_indices=torch.arange(bs, dtype=torch.int64,
                                                     device=fb.seq_lens.device),
        seq_lens=fb.seq_lens, seq_lens_sum=int(fb.seq_lens.sum().item()), seq_lens_cpu=None,
        positions=fb.positions, out_cache_loc=fb.out_cache_loc, spec_info=None)


def out_graph_draft_extend(backend, fb: ForwardBatch, in_capture: bool) -> tuple[tuple, object]:
    """The release's ``init_forward_metadata_out_graph`` for a DRAFT_EXTEND bucket, up to its
    ``replay_cuda_graph_metadata_from``: returns the harness's ``(key, temp)``."""
    prepare_shim(backend)
    sh = backend.shim
    built: list = []
    sh.make_core_attn_metadata = _core_builder(backend.page_size, fb.positions, fb.batch_size)
    sh.replay_cuda_graph_metadata_from = lambda bs, temp_metadata, bucket: built.append(
        temp_metadata)
    try:
        RealBackend.init_forward_metadata_out_graph(sh, _batch(fb, in_capture),
                                                    in_capture=in_capture)
    finally:
        del sh.make_core_attn_metadata, sh.replay_cuda_graph_metadata_from
    if len(built) != 1:
        raise RuntimeError(f"sglang draft-extend out-graph prep built {len(built)} metadata "
                           "objects (expected one)")
    return (GraphBucket.DRAFT_EXTEND, fb.batch_size), _as_attn_metadata(built[0])


def eager_draft_extend(backend, fb: ForwardBatch) -> AttnMetadata:
    """The release's ``init_forward_metadata_draft_extend`` as its eager init calls it for a
    DRAFT_EXTEND_V2 batch (``speculative_num_draft_tokens`` rows per request)."""
    prepare_shim(backend)
    sh = backend.shim
    sh.make_core_attn_metadata = _core_builder(backend.page_size, fb.positions, fb.batch_size)
    try:
        md = RealBackend.init_forward_metadata_draft_extend(
            sh, req_pool_indices=torch.arange(fb.batch_size, dtype=torch.int64,
                                              device=fb.seq_lens.device),
            seq_lens=fb.seq_lens.to(torch.int32),
            num_tokens_per_req=sh.speculative_num_draft_tokens,
            out_cache_loc=fb.out_cache_loc)
    finally:
        del sh.make_core_attn_metadata
    return _as_attn_metadata(md)
