"""The layout contract of a request-window forward and what the window oracle predicts (plain
Python, imports nothing of ours): :func:`layout` (runs, ``write_loc``, history rows with their
source ring rows and validity, commit mask, size over ``(slot, position, floor)`` rows),
:func:`padded_layout` (with padding rows), :func:`layout_indices` (what attention reads), and the
expectation types :class:`WinFwdExp`, :class:`WinStepExp` and :class:`WindowExp`."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Layout", "WinFwdExp", "WinStepExp", "WindowExp", "layout", "layout_indices",
           "padded_layout"]


@dataclass
class Layout:
    """The layout of one window forward (plain lists; ``n`` rows, ``groups`` groups)."""

    groups: int
    write_loc: list[int]
    history_src: list[int]  # [groups * W] ring row each history row copies (zero row if invalid)
    history_pos: list[int]
    history_valid: list[bool]
    commit: list[bool]
    runs: list[tuple[int, int, int]]  # (slot, first position, rows) per run
    size: int


def layout(rows: list[tuple[int, int, int]], groups: int, W: int, cap: int, zero_row: int
           ) -> Layout:
    """``rows``: ``(slot, position, floor)`` per query row, batch order. Runs are maximal blocks
    of consecutive rows with equal slot; a run's floor is its first row's."""
    n = len(rows)
    runs: list[list[int]] = []  # [slot, first pos, count, floor, first row]
    for i, (slot, pos, floor) in enumerate(rows):
        if runs and runs[-1][0] == slot:
            runs[-1][2] += 1
        else:
            runs.append([slot, pos, 1, floor, i])
    write_loc = [groups * W + i for i in range(n)]
    src, hpos, valid = [], [], []
    for g in range(groups):
        for j in range(W):
            if g < len(runs):
                slot, first, _, floor, _ = runs[g]
                p = first - W + j
                ok = p >= 0 and p >= floor
            else:
                slot, p, ok = 0, -W + j, False
            hpos.append(p)
            valid.append(ok)
            src.append(slot * cap + p % cap if ok else zero_row)
    commit = []
    for run in runs:
        count = run[2]
        commit += [count - 1 - k < cap for k in range(count)]
    return Layout(groups, write_loc, src, hpos, valid, commit,
                  [(r[0], r[1], r[2]) for r in runs], groups * W + n)


def padded_layout(rows: list[tuple[int, int, int]], pad: int, groups: int, W: int, cap: int,
                  zero_row: int) -> Layout:
    """The layout of ``rows`` followed by ``pad`` padding rows: padding row k writes workspace
    row ``groups * W + len(rows) + k`` and is in no run (no history group, commit false)."""
    lay = layout(rows, groups, W, cap, zero_row)
    lay.write_loc += [lay.size + k for k in range(pad)]
    lay.commit += [False] * pad
    lay.size += pad
    return lay


@dataclass
class WinFwdExp:
    step: int
    fwd: int
    mode: str
    paged: bool  # True: paged-pool tail forward (locations are SWA slots M[loc])
    locs: list[list[int]]  # per target layer: the locations its store receives
    tail_layers: list[int]  # late layers of this forward (their locs are the tail's)
    tail_lens: list[int]  # per request of the batch (empty without a tail)
    workspace: list[bytes] | None  # window: workspace bytes after each layer's commit
    commit: list[bool] = field(default_factory=list)  # commit mask of the full layout
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    bucket: int | None = None  # a DECODE graph's bucket (graph executors); None: eager
    size: int = 0  # the layout's size (groups * W + rows)
    # EXTEND forwards: the compressor locations (features.tail_prefix.oracle.CompExp); None otherwise
    comp: object | None = None
    tail_capacity: int = 0  # prefill-graph tail: rows of every late-layer store (tail_graph)
    # W5 at use (features.request_window.history_checks): per target layer, per history row of the layout that
    # layer runs, the position the Case says it holds (-1: invalid, the zero row); empty: not
    # predicted for this forward
    history: list[list[int]] = field(default_factory=list)


@dataclass
class WinStepExp:
    step: int
    tags: list[list[int]] | None  # window only: per layer
    ring: list[bytes] | None  # window only: per layer, all R rows


@dataclass
class WindowExp:
    forwards: list[WinFwdExp] = field(default_factory=list)
    steps: list[WinStepExp] = field(default_factory=list)
    refused: tuple[int, str] | None = None  # (step, why): the forward the target must refuse
    workspace_rows: int = 0
    ring_rows: int = 0
    # Cases with graph window steps: what an executor that captures no graphs (eager) sees,
    # every step eager; None when no step differs (this expectation holds for every executor)
    eager: WindowExp | None = None

    def pool_writes(self):
        """The paged late-layer tail's writes into the paged target pool, ``(step, "target",
        slots)`` per paged forward (``Expectation.pool_writes``: the ``write_set`` check)."""
        for we in self.forwards:
            if we.paged:
                yield we.step, "target", [t for lc in we.locs for t in lc]


def layout_indices(rows: list[tuple[int, int, int]], groups: int, W: int
                   ) -> tuple[list[list[int]], list[int]]:
    """What attention reads (addendum §2.2 ``indices`` / ``lengths``): for row i and lookback
    ``j < W`` the position ``p = pos_i - j``; valid iff ``p >= 0`` and ``p >= floor_i``; a
    position before the run's first one reads history row ``g * W + (p - (first - W))``, a
    position of the run reads the workspace row it was written to (``G * W + start + p -
    first``); invalid lookbacks are ``-1``. ``lengths[i]`` counts the valid ones."""
    out, lens = [], []
    g, start, first = -1, 0, 0
    prev = None
    for i, (slot, pos, floor) in enumerate(rows):
        if slot != prev:
            g, start, first, prev = g + 1, i, pos, slot
        idx = []
        for j in range(W):
            p = pos - j
            if p < 0 or p < floor:
                idx.append(-1)
            elif p < first:
                idx.append(g * W + p - (first - W))
            else:
                idx.append(groups * W + start + p - first)
        out.append(idx)
        lens.append(sum(1 for x in idx if x >= 0))
    return out, lens
