"""Forward modes, graph buckets and the forward batch (spec §3, §4.3, §5).

Models upstream's ``forward_batch_info`` module: the ``ForwardMode`` IntEnum with the
predicates swafuzz reads (plus the older ``DRAFT_EXTEND`` member and ``is_draft_extend``), the
DSV4 backend's ``_GraphBucket`` classification and ``_get_logical_forward_mode``, and a minimal
``ForwardBatch`` carrying what the SWA write path reads.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import torch


class ForwardMode(enum.IntEnum):
    """All members of spec §3 in ``auto()`` order; ``DRAFT_EXTEND`` is the older member that sits
    between ``TARGET_VERIFY`` and ``DRAFT_EXTEND_V2``."""

    EXTEND = enum.auto()
    DECODE = enum.auto()
    MIXED = enum.auto()
    IDLE = enum.auto()
    TARGET_VERIFY = enum.auto()
    DRAFT_EXTEND = enum.auto()
    DRAFT_EXTEND_V2 = enum.auto()
    PREBUILT = enum.auto()
    SPLIT_PREFILL = enum.auto()
    DLLM_EXTEND = enum.auto()

    # -- predicates (spec §3 table) ---------------------------------------------------------
    def is_extend(self, include_draft_extend_v2: bool = False) -> bool:
        M = ForwardMode
        return self in (M.EXTEND, M.MIXED, M.TARGET_VERIFY, M.SPLIT_PREFILL, M.DLLM_EXTEND,
                        M.DRAFT_EXTEND) or (include_draft_extend_v2 and self == M.DRAFT_EXTEND_V2)

    def is_prefill(self, include_draft_extend_v2: bool = False) -> bool:
        return self.is_extend(include_draft_extend_v2)

    def is_context_parallel_extend(self, include_draft_extend_v2: bool = False) -> bool:
        M = ForwardMode
        return self in (M.EXTEND, M.MIXED) or (include_draft_extend_v2
                                               and self == M.DRAFT_EXTEND_V2)

    def is_decode(self) -> bool:
        return self == ForwardMode.DECODE

    def is_idle(self) -> bool:
        return self == ForwardMode.IDLE

    def is_decode_or_idle(self) -> bool:
        return self in (ForwardMode.DECODE, ForwardMode.IDLE)

    def is_target_verify(self) -> bool:
        return self == ForwardMode.TARGET_VERIFY

    def is_draft_extend(self, include_v2: bool = False) -> bool:
        return self == ForwardMode.DRAFT_EXTEND or (include_v2
                                                    and self == ForwardMode.DRAFT_EXTEND_V2)

    def is_draft_extend_v2(self) -> bool:
        return self == ForwardMode.DRAFT_EXTEND_V2

    def is_extend_or_draft_extend_or_mixed(self, include_draft_extend_v2: bool = False) -> bool:
        M = ForwardMode
        return self in (M.EXTEND, M.MIXED, M.SPLIT_PREFILL, M.DRAFT_EXTEND) or (
            include_draft_extend_v2 and self == M.DRAFT_EXTEND_V2)

    def is_cuda_graph(self) -> bool:
        M = ForwardMode
        return self in (M.DECODE, M.TARGET_VERIFY, M.IDLE, M.DLLM_EXTEND)

    def is_cpu_graph(self) -> bool:
        return self == ForwardMode.DECODE

    def is_extend_without_speculative(self) -> bool:
        return (self.is_extend() and self != ForwardMode.TARGET_VERIFY
                and not self.is_draft_extend(include_v2=True))


class GraphBucket(enum.Enum):
    """The DSV4 backend's graph bucket kinds (spec §3 ``_GraphBucket.of``)."""

    DECODE_OR_IDLE = "decode_or_idle"
    TARGET_VERIFY = "target_verify"
    DRAFT_EXTEND = "draft_extend"

    @staticmethod
    def of(mode: ForwardMode) -> GraphBucket:
        if mode.is_decode_or_idle():
            return GraphBucket.DECODE_OR_IDLE
        if mode == ForwardMode.TARGET_VERIFY:
            return GraphBucket.TARGET_VERIFY
        if mode == ForwardMode.DRAFT_EXTEND_V2:
            return GraphBucket.DRAFT_EXTEND
        raise NotImplementedError(f"GraphBucket.of: no graph bucket for forward mode {mode.name}")


@dataclass
class ForwardBatch:
    """What one forward hands the attention backend.

    * ``out_cache_loc``: int64 ``[N]`` full locations, one per query-token row (``None`` only for
      synthetic draft-extend capture batches, spec §4.4);
    * ``seq_lens``: int64 ``[batch_size]``; ``positions``: int64 ``[N]``;
    * ``actual_forward_mode``: the runtime mode of a graph replay view (the capture mode is in
      ``forward_mode``), spec §5.1; ``original_forward_mode``: the mode stashed by a DP rewrite.
    """

    forward_mode: ForwardMode
    batch_size: int
    out_cache_loc: torch.Tensor | None
    seq_lens: torch.Tensor
    positions: torch.Tensor
    actual_forward_mode: ForwardMode | None = None
    original_forward_mode: ForwardMode | None = None

    def view(self, **changes) -> ForwardBatch:
        """A shallow copy with some fields replaced (tensors shared, not copied)."""
        return replace(self, **changes)


def logical_forward_mode(fb: ForwardBatch) -> ForwardMode:
    """``_get_logical_forward_mode`` (spec §3): IDLE stays IDLE, else the stashed original mode
    (set by a DP rewrite) or the current one."""
    if fb.forward_mode.is_idle():
        return ForwardMode.IDLE
    return fb.original_forward_mode or fb.forward_mode
