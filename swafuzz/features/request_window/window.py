"""The request window's data in the engine model (the leaf of the V4.1 write path, importing none
of the paths built on it; ``SEMANTICS.md`` beside this file, addendum §2.2-§2.4): what a forward
/ step reports (:class:`WinFwdObs` / :class:`WinStepObs`), :class:`LayoutT` and
:func:`build_layout` (int64/int32 tensors, one group per request: write rows, history sources /
positions / validity, commit mask, size), :func:`tail_layout` (late layers' rows, lengths,
floors), :class:`RequestWindowModel` (per target layer the ring ``[(S+1)*cap + P, row]``, last
page zeros; ``tags`` int64 ``[layers, ring rows]``, -1 empty; the one-layer workspace ``[WS,
row]``; all viewed ``[rows // P, P, row_width]`` of the row dtype for the store kernel) and the
paths' shared helpers."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.targets.observation import StoreObs


@dataclass
class WinFwdObs:
    """One forward of the window / tail path: per target layer the store (locations as handed
    to the store kernel, rows) and, under a window, the workspace bytes after that layer's
    commit."""

    step: int
    fwd: int
    mode: str
    stores: list[StoreObs]
    workspace: list[bytes]
    # DECODE graphs under a window (features.window_graphs.engine): the bucket, a token of the layout
    # object the graph's stores used (W7 identity) and its size; None on the eager path
    bucket: int | None = None
    layout_id: int | None = None
    layout_size: int | None = None
    # EXTEND forwards: the compressors' write locations (features.tail_prefix.engine.CompObs)
    comp: object | None = None
    # W5 at use (features.request_window.history_checks): per target layer, the window's tags at the history
    # source rows of the layout that layer's store used, read after its history copy and before
    # its commit (-1: an empty row or the zero row); None: not recorded (graph runners)
    history_tags: list[list[int]] | None = None


@dataclass
class WinStepObs:
    """After a step: per target layer the tags (ints) and the ring bytes (window only)."""

    step: int
    tags: list[list[int]] | None
    ring: list[bytes] | None


def dtype_name(t: torch.Tensor) -> str:
    """``t``'s dtype as observations name it (``"int32"``)."""
    return str(t.dtype).removeprefix("torch.")


def store_obs(layer: int, loc: torch.Tensor, rows: int) -> StoreObs:
    """The store of ``layer``: the locations ``loc`` it was handed, ``rows`` K rows."""
    return StoreObs(layer=layer, loc_dtype=dtype_name(loc), locs=loc.tolist(), rows=rows)


def graph_obs(i: int, mode: str, loc: torch.Tensor, rows: int, layers: int, workspace,
              bucket: int, token: int, size: int) -> WinFwdObs:
    """A graph runner's forward (index 0): every layer stored ``rows`` K rows at ``loc``;
    ``workspace`` per layer, the bucket, the layout's token (W7) and size."""
    return WinFwdObs(i, 0, mode, [store_obs(layer, loc, rows) for layer in range(layers)],
                     workspace, bucket, token, size)


def i64(v, device) -> torch.Tensor:
    """``v`` as an int64 tensor on ``device``."""
    return torch.tensor(v, dtype=torch.int64, device=device)


def seq_after(per_req: list[int], positions) -> list[int]:
    """Each request's length after a forward whose rows (``per_req`` per request, batch order)
    sit at ``positions``: its last row's position + 1."""
    out, k = [], 0
    for n in per_req:
        out.append(int(positions[k + n - 1]) + 1)
        k += n
    return out


@dataclass
class LayoutT:
    """A window layout as tensors: ``req``/``pos`` int64 [n], ``write_loc`` int32 [n],
    ``history_src``/``history_pos`` int64 [groups*W], ``history_valid`` bool,
    ``commit_mask`` bool [n], ``size`` int."""

    req: torch.Tensor
    pos: torch.Tensor
    write_loc: torch.Tensor
    history_src: torch.Tensor
    history_pos: torch.Tensor
    history_valid: torch.Tensor
    commit_mask: torch.Tensor
    size: int


#: the tensors of a :class:`LayoutT` (``WindowLayout.copy_`` refreshes each in place)
LAYOUT_FIELDS = ("req", "pos", "write_loc", "history_src", "history_pos", "history_valid",
                 "commit_mask")


def copy_layout(held: LayoutT, fresh: LayoutT) -> None:
    """``WindowLayout.copy_``: every tensor of ``held`` refreshed in place from ``fresh`` (sizes
    equal: captured graphs hold the addresses)."""
    for f in LAYOUT_FIELDS:
        getattr(held, f).copy_(getattr(fresh, f))


def with_padding(lay: LayoutT, pad: int) -> LayoutT:
    """``lay`` followed by ``pad`` padding rows: slot 0, position 0, workspace rows ``lay.size
    ..``, never committed, in no run (no history group)."""
    dev = lay.req.device
    z = torch.zeros(pad, dtype=torch.int64, device=dev)
    return LayoutT(torch.cat([lay.req, z]), torch.cat([lay.pos, z]),
                   torch.cat([lay.write_loc, torch.arange(lay.size, lay.size + pad,
                                                          dtype=torch.int32, device=dev)]),
                   lay.history_src, lay.history_pos, lay.history_valid,
                   torch.cat([lay.commit_mask, torch.zeros(pad, dtype=torch.bool, device=dev)]),
                   lay.size + pad)


def build_layout(req: torch.Tensor, pos: torch.Tensor, floor: torch.Tensor | None, groups: int,
                 W: int, cap: int, zero_row: int) -> LayoutT:
    """Runs = maximal blocks of equal consecutive ``req``; history and commit per run."""
    n = req.numel()
    dev = req.device
    idx = torch.arange(n, device=dev)
    new_run = torch.ones(n, dtype=torch.bool, device=dev)
    new_run[1:] = req[1:] != req[:-1]
    run = torch.cumsum(new_run.long(), 0) - 1
    starts = idx[new_run]
    counts = torch.diff(torch.cat([starts, torch.tensor([n], device=dev)]))
    run_req, run_first = req[starts], pos[starts]
    run_floor = floor[starts] if floor is not None else torch.zeros_like(run_first)
    nruns = starts.numel()
    j = torch.arange(W, device=dev)
    g = torch.arange(groups, device=dev)
    live = g < nruns
    gi = g.clamp(max=max(nruns - 1, 0))
    hpos = torch.where(live[:, None], run_first[gi][:, None] - W + j[None, :], -W + j[None, :])
    valid = live[:, None] & (hpos >= 0) & (hpos >= run_floor[gi][:, None])
    hreq = torch.where(live, run_req[gi], 0)[:, None].expand(groups, W)
    src = torch.where(valid, hreq * cap + hpos % cap, torch.full_like(hpos, zero_row))
    last = (starts + counts - 1)[run]
    commit = (last - idx) < cap
    write_loc = (groups * W + idx).to(torch.int32)
    return LayoutT(req, pos, write_loc, src.flatten(), hpos.flatten(), valid.flatten(), commit,
                   groups * W + n)


def tail_layout(per_req: list[int], seq_after: list[int], W: int, device
                ) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """(row indices into the forward of the tail rows int64, tail length per request, floor per
    tail row int64 = max(0, seq - W)): each request's last min(W, n) rows."""
    idx, lens, floors, start = [], [], [], 0
    for n, seq in zip(per_req, seq_after):
        t = min(W, n)
        idx += range(start + n - t, start + n)
        lens.append(t)
        floors += [max(0, seq - W)] * t
        start += n
    return (torch.tensor(idx, dtype=torch.int64, device=device), lens,
            torch.tensor(floors, dtype=torch.int64, device=device))


class RequestWindowModel:
    """Ring, tags and workspace of a request-window pool (module docstring)."""

    def __init__(self, slots: int, cap: int, W: int, chunk: int, layers: int, page: int,
                 row_width: int, dtype, device):
        self.cap, self.P, self.W = cap, page, W
        self.zero_row = (slots + 1) * cap
        self.rows = self.zero_row + page
        self.ws_rows = -(-((slots + 1) * W + chunk) // page) * page
        self.dtype, self.row_width = dtype, row_width
        self.state = []
        for _ in range(layers):
            t = torch.full((self.rows, row_width * dtype.itemsize), POISON_BYTE,
                           dtype=torch.uint8, device=device)
            t[self.zero_row:] = 0
            self.state.append(t.view(dtype).view(self.rows // page, page, row_width))
        self.tags = torch.full((layers, self.rows), -1, dtype=torch.int64, device=device)
        self.workspace = torch.full((self.ws_rows, row_width * dtype.itemsize), POISON_BYTE,
                                    dtype=torch.uint8, device=device
                                    ).view(dtype).view(self.ws_rows // page, page, row_width)
        self.layout: LayoutT | None = None
        self.prepared: int | None = None
        self._idle: LayoutT | None = None

    def rows_of(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(-1, self.row_width)

    def reset(self, slot: int) -> None:
        self.tags[:, slot * self.cap:(slot + 1) * self.cap] = -1
        self.prepared = None

    def check_size(self, layout: LayoutT) -> None:
        if layout.size > self.ws_rows:
            raise RuntimeError(f"request-window layout of {layout.size} rows does not fit the "
                               f"workspace of {self.ws_rows} rows")

    def activate(self, layout: LayoutT) -> None:
        if self.layout is layout:
            return
        self.check_size(layout)
        self.layout = layout
        self.prepared = None

    def activate_idle(self, n: int) -> torch.Tensor:
        lay = self._idle
        if lay is None or lay.req.numel() != n:
            z = torch.zeros(n, dtype=torch.int64, device=self.tags.device)
            lay = self._idle = build_layout(z, z, None, 1, self.W, self.cap, self.zero_row)
        self.activate(lay)
        return lay.write_loc

    def buffer(self, layer: int) -> torch.Tensor:
        if self.prepared != layer:
            lay = self.layout
            ws = self.rows_of(self.workspace)
            ws[:lay.history_src.numel()] = self.rows_of(self.state[layer])[lay.history_src]
            self.prepared = layer
        return self.workspace

    def commit_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Copy the layout's committed rows of ``layer`` from the workspace into the ring;
        returns their ring rows and positions (the tags :meth:`commit` then writes)."""
        lay = self.layout
        m = lay.commit_mask
        pos = lay.pos[m]
        dst = lay.req[m] * self.cap + pos % self.cap
        self.rows_of(self.state[layer])[dst] = \
            self.rows_of(self.buffer(layer))[lay.write_loc[m].long()]
        return dst, pos

    def commit(self, layer: int) -> None:
        dst, pos = self.commit_rows(layer)
        self.tags[layer, dst] = pos


class LayoutTokens:
    """A graph runner's stable token per layout object (W7 identity): ``tokens(lay)`` numbers
    the layouts in first-seen order and holds each one, so its ``id`` is never reused."""

    def __init__(self):
        self.ids: dict[int, int] = {}
        self.held: list[LayoutT] = []

    def __call__(self, lay: LayoutT) -> int:
        k = id(lay)
        if k not in self.ids:
            self.ids[k] = len(self.ids)
            self.held.append(lay)
        return self.ids[k]


def tensor_bytes(t: torch.Tensor) -> bytes:
    """A tensor's bytes (any device, any dtype; made contiguous first)."""
    return t.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes()
