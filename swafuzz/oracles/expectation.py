"""What the engine oracle predicts for a Case (plain data, a leaf): :class:`ForwardExp` per forward,
:class:`StepExp` per step, in an :class:`Expectation` with per-feature channels (feature name ->
its own expectation, filled by its shadow, read by its checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Expectation", "ForwardExp", "StepExp"]


@dataclass
class ForwardExp:
    """One expected forward. ``targets[r]`` / ``full_locs[r]`` are for real rows r < n_real."""

    step: int
    fwd: int
    pool: str  # "target" | "draft"
    mode: str  # ForwardMode name as the backend sees it
    exec: str  # "eager" | "graph"
    n_real: int
    targets: list[int]  # expected SWA write slot per real row (= M[full_locs[r]])
    full_locs: list[int]
    rows_eager: int  # rows the eager path writes (padded count for dp_decode, tokens for idle)
    rows_graph: int | None  # rows under a captured bucket; None if no bucket fits / no graph
    #: issue 12 (draft_block): padded row k (k = r - n_real) resolves to ``pad_cycle[k % len]``
    #: (all in page 0); empty: every padded row resolves to 0
    pad_cycle: tuple[int, ...] = ()
    #: the full locations the metadata is prepared from when not ``full_locs``: a multi-step
    #: draft decode's whole ``[bs, topk, steps]`` batch (spec §4.8), each step stamping a slice
    prep_locs: list[int] | None = None
    #: the prepared batch: request lengths after the step's allocation and row positions, padding
    #: after them (fill 1, position 0, spec §5.1, §5.4); None: not predicted (feature ops)
    seq_lens: list[int] | None = None
    positions: list[int] | None = None


@dataclass
class StepExp:
    """State after step ``step``. ``pools[name][layer]``: all ``(swa_pages+1)*P*row_bytes`` bytes
    of that SWA buffer; bytes of slots < P (dummy page) are poison and not meaningful."""

    step: int
    op: str
    mapping: list[int]  # M, sentinel included
    free_full_pages: list[int]  # sorted
    free_swa_pages: list[int]  # sorted
    requests: dict[int, tuple[list[int], int]]  # rid -> (full slots by position, evicted frontier)
    pools: dict[str, list[bytearray]]


@dataclass
class Expectation:
    forwards: list[ForwardExp] = field(default_factory=list)
    steps: list[StepExp] = field(default_factory=list)
    # per-feature channels: feature name -> that feature's expectation (e.g. the request window /
    # late-layer tail path's, features.request_window.channel); no entry when the Case has none
    channels: dict[str, Any] = field(default_factory=dict)

    def channel(self, name: str) -> Any:
        """Feature ``name``'s expectation; None when the Case has none."""
        return self.channels.get(name)

    def pool_writes(self) -> list[tuple[int, str, list[int]]]:
        """Writes into the paged pools the channels expect besides :attr:`forwards` (e.g. a
        paged late-layer tail's), ``(step, pool, slots)``: from every channel's expectation
        that has a ``pool_writes()``."""
        return [w for ch in self.channels.values() if hasattr(ch, "pool_writes")
                for w in ch.pool_writes()]

