"""The server-level oracle's check of the model runner's dispatch (plain Python; what the
target's pipeline records in ``ServerObs.dispatch`` / ``ServerObs.idles``).

``model_dispatch``: a forward (or an attention-DP rank's IDLE forward) reached the runner entry
its mode after the MLP sync gives - a decode graph replay (``graph``), else the eager runner's
``_execute_decode`` / ``_execute_extend`` / ``_execute_idle`` - with the batch size it runs, and
afterwards the attention backend holds the metadata built for *this* batch, or none after an
unpadded IDLE (an empty rank drops it: a stale one still points at request rows the previous
batch held, freed since). An IDLE's rows (its padding) are stored at the dummy slot 0.
"""

from __future__ import annotations

from swafuzz.features.record import check

#: the eager runner's entry per mode the model runs
ENTRY = {"DECODE": "_execute_decode", "EXTEND": "_execute_extend", "IDLE": "_execute_idle"}


@check("model_dispatch", level="server")
def model_dispatch(what: str, got: dict | None, entry: str, mode: str, batch_size: int,
                   metadata_of) -> list[str]:
    """``got`` (the dispatch record of ``what``) against the expected ``entry``, ``mode``,
    batch size and metadata owner (ignored for a graph replay: its metadata is the graph
    runner's)."""
    if got is None:
        return [f"{what}: the release's model runner never dispatched it"]
    out = []
    want = {"entry": entry, "mode": mode, "batch_size": batch_size}
    if entry != "graph":
        want["metadata_of"] = metadata_of
    for k, v in want.items():
        if got.get(k) != v:
            out.append(f"{what}: {k} {got.get(k)!r}, expected {v!r}")
    return out


def forward_dispatch(ev, rec, got: dict | None, mode: str, bucket: int | None,
                     tp_pad) -> list[str]:
    """A planned forward's expected dispatch: the graph bucket it replays (``bucket``), else the
    eager entry of ``mode`` (the MLP sync's, where it relabels) with its (padded, ``tp_pad``:
    rows and batch size) batch size; the metadata built for this forward."""
    if rec.exec == "graph" and bucket is not None:
        return model_dispatch(f"forward {ev.index}", got, "graph", "DECODE", bucket, None)
    bs = tp_pad[1] if tp_pad is not None else len(ev.rids)
    return model_dispatch(f"forward {ev.index}", got, ENTRY[mode], mode, bs, ev.index)


def idle_stores(what: str, stores: list[list[int]], layers: int, rows: int) -> list[str]:
    """An IDLE forward's stores: every layer ``rows`` rows, all at the dummy SWA slot 0."""
    want = [[0] * rows for _ in range(layers)]
    return [] if stores == want else [f"{what}: stores {stores}, expected {want}"]
