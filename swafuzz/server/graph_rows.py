"""Every row a release's decode graph fill writes, predicted from the Case (plain Python).

Two things the Case determines but no check predicted before: which ``ReqToTokenPool`` row each
request holds (:class:`ReqSlots`), and what the padded rows of the runner's static buffers hold
after each replay's fill (:class:`StaticBuffers`). Both follow the plan (:mod:`.timeline`) and
the observed retraction order only (the allocator's KV choices are not needed here).

Release semantics (:func:`fill_semantics`, from the observation's release):

* ``ReqToTokenPool`` (spec additions §2.1: row 0 is the padding row, free rows ``1..size``,
  ``size`` = the Case's requests + 1 as the server builds it here): a prefill's new requests
  take rows in batch order, a request continuing a chunk keeps its row; a release or a
  retraction appends the row to the free list. 0.5.18-0.5.23 take the free list's *tail*
  (``free_slots[-k:]``), 0.5.12 and 0.5.14-0.5.17 its *head* (``free_slots[:k]``).
* The decode runner's static buffers (spec §5.1), ``max(cuda_graph_bs_decode)`` rows each,
  zero at creation (``seq_lens``: the fill value): a replay of ``raw_bs`` rows in bucket ``bs``
  writes rows ``0..raw_bs-1`` with the batch's values; the padded rows ``raw_bs..bs-1`` get
  ``out_cache_loc`` 0 and ``seq_lens`` the fill value (1, DSV4) on every release; the
  registry's fill (0.5.14-0.5.23: ``PaddingPolicy.ZERO``) zeroes ``req_pool_indices`` and
  ``positions`` there too, while 0.5.12's ``populate_from_forward_batch`` leaves them as the
  previous replay wrote them (spec §5.1 "older versions: req_pool_indices tail not reset").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the decode runner's static buffers whose rows are predicted (each ``bucket`` rows long)
BUFFERS = ("out_cache_loc", "seq_lens", "positions", "req_pool_indices")


@dataclass(frozen=True)
class FillSemantics:
    """A release's ``ReqToTokenPool`` row order (``"tail"`` / ``"head"``) and whether its
    graph fill resets the padded rows of ``req_pool_indices`` / ``positions`` to 0."""

    slot_order: str
    reset_index_tails: bool


#: (first, last) release -> semantics; a release outside every range is not predicted
_SEMANTICS = (((0, 5, 12), (0, 5, 12), FillSemantics("head", False)),
              ((0, 5, 14), (0, 5, 17), FillSemantics("head", True)),
              ((0, 5, 18), (0, 5, 23), FillSemantics("tail", True)))


def fill_semantics(target_version: str) -> FillSemantics | None:
    """The semantics of the release named by an observation's ``target_version``
    (``"sglang X.Y.Z ..."``), or None for a release whose semantics were not read."""
    m = re.match(r"sglang (\d+)\.(\d+)\.(\d+)", target_version or "")
    if m is None:
        return None
    v = tuple(int(x) for x in m.groups())
    return next((s for lo, hi, s in _SEMANTICS if lo <= v <= hi), None)


class ReqSlots:
    """The release's ``ReqToTokenPool`` free list as the plan drives it: ``rows`` maps a
    request holding a row to it."""

    def __init__(self, requests: int, order: str):
        self.order = order
        self.free_rows = list(range(1, requests + 2))  # size = requests + 1, row 0 padding
        self.rows: dict[int, int] = {}

    def take(self, rids) -> None:
        """A prefill of ``rids`` (batch order): the ones without a row take one each."""
        new = [r for r in rids if r not in self.rows]
        if not new:
            return
        if len(new) > len(self.free_rows):
            raise ValueError(f"requests {new} need {len(new)} rows, {len(self.free_rows)} free")
        if self.order == "tail":
            got, self.free_rows = self.free_rows[-len(new):], self.free_rows[:-len(new)]
        else:
            got, self.free_rows = self.free_rows[:len(new)], self.free_rows[len(new):]
        self.rows.update(zip(new, got))

    def free(self, rids) -> None:
        """Requests leaving (released or retracted), in the order the release frees them."""
        for r in rids:
            if r in self.rows:
                self.free_rows.append(self.rows.pop(r))


class StaticBuffers:
    """The decode runner's static buffers across a run's replays (module docstring)."""

    def __init__(self, max_bs: int, seq_fill: int, reset_index_tails: bool):
        self.reset = reset_index_tails
        self.fill_value = seq_fill
        self.rows = {name: [0] * max_bs for name in BUFFERS}
        self.rows["seq_lens"] = [seq_fill] * max_bs

    def replay(self, bucket: int, real: dict[str, list[int]]) -> dict[str, list[int]]:
        """Fill for one replay of ``len(real['seq_lens'])`` rows in ``bucket``: the buffers'
        first ``bucket`` rows afterwards."""
        n = len(real["seq_lens"])
        pads = {"out_cache_loc": 0, "seq_lens": self.fill_value}
        if self.reset:
            pads.update(positions=0, req_pool_indices=0)
        for name, buf in self.rows.items():
            if n < bucket and name in pads:
                buf[n:bucket] = [pads[name]] * (bucket - n)
            buf[:n] = real[name]
        return {name: buf[:bucket] for name, buf in self.rows.items()}


class GraphRows:
    """One run's prediction: the request rows follow every event of the plan (:meth:`event`),
    the static buffers every graph replay (:meth:`replay`); inert (None predictions) without
    decode graphs or on a release whose fill semantics were not read."""

    def __init__(self, case, target_version: str, seq_fill: int):
        sem = fill_semantics(target_version)
        c = case.config
        self.on = sem is not None and bool(c.cuda_graph_bs_decode) and not c.disable_cuda_graph
        self.slots = ReqSlots(len(case.requests), sem.slot_order if sem else "tail")
        self.buffers = StaticBuffers(max(c.cuda_graph_bs_decode or (1,)), seq_fill,
                                     bool(sem and sem.reset_index_tails))

    def event(self, ev) -> None:
        """A plan event (the timeline's ``Forward`` / ``Release`` / ``Retract``)."""
        if getattr(ev, "mode", None) == "EXTEND":
            self.slots.take(ev.rids)
        elif not hasattr(ev, "mode"):
            self.slots.free(ev.rids)

    def replay(self, st, fwd, alloc: list[list[int]], bucket: int | None) -> dict | None:
        """A DECODE replayed in ``bucket``: the four buffers' first ``bucket`` rows after the
        fill (``st.tokens``: each request's tokens after the forward; ``alloc``: its rows'
        allocated ``[full, swa]``), or None (eager, or not predicted)."""
        if not self.on or bucket is None:
            return None
        real = {"out_cache_loc": [f for f, _ in alloc],
                "seq_lens": [len(st.tokens[r]) for r in fwd.rids],
                "positions": [start for start, _ in fwd.spans],
                "req_pool_indices": [self.slots.rows.get(r, -1) for r in fwd.rids]}
        return self.buffers.replay(bucket, real)
