"""The server-level oracle's checks of a forward's shape (:mod:`swafuzz.server.oracle`'s walk
calls them; its docstring says what each expects): ``batch_shape`` (positions and sequence
lengths, attention-TP padding included) and ``graph_fill`` (a decode graph replay's buffers and
the backend's metadata), with the graph bucket and padding rules they share."""

from __future__ import annotations

from swafuzz import features as registry
from swafuzz.features.record import check
from swafuzz.server.case import ServerCase
from swafuzz.server.timeline import Forward


def graph_bucket(case: ServerCase, mode: str, bs: int, graphs: bool) -> int | None:
    """The smallest captured batch size holding a DECODE batch when graphs are captured
    (``disable_cuda_graph`` false, sizes given) and the executor replays them; None: eager."""
    c = case.config
    if not graphs or c.disable_cuda_graph or not c.cuda_graph_bs_decode or mode != "DECODE":
        return None
    return min((b for b in c.cuda_graph_bs_decode if b >= bs), default=None)


#: the sequence length the release pads a batch's added requests with (DeepSeek-V4's attention
#: backend's graph fill value, spec §5.4 (4))
SEQ_LEN_FILL = 1


def sync_pad(case: ServerCase, mode: str, rows: int, bs: int, exec_: str):
    """The rows and batch size a forward runs with after the MLP sync's padding (the features'
    oracle part ``server_pad``: attention TP, ``features/dp/server_rules.py``), or None."""
    return registry.first("oracle", "server_pad", case, mode, rows, bs, exec_)


@check("batch_shape", level="server")
def batch_shape(case: ServerCase, st, fwd: Forward, rec, pad=None) -> str | None:
    pos = [p for start, n in fwd.spans for p in range(start, start + n)]
    lens = [len(st.tokens[rid]) for rid in fwd.rids]
    pad = pad or sync_pad(case, fwd.mode, len(pos), len(lens), rec.exec)
    if pad is not None:  # padded rows at position 0, added requests at the fill length
        pos = pos + [0] * (pad[0] - len(pos))
        lens = lens + [SEQ_LEN_FILL] * (pad[1] - len(lens))
    if rec.positions and rec.positions != pos:
        return f"positions {rec.positions}, the plan's {pos}"
    if rec.seq_lens and rec.seq_lens != lens:
        return f"seq_lens {rec.seq_lens}, expected {lens}"
    return None


@check("graph_fill", level="server")
def graph_fill(case: ServerCase, st, fwd: Forward, rec, bucket: int | None,
               predicted: dict | None = None) -> str | None:
    """The replay's bucket, its static buffers' first ``bucket`` rows and the backend's replay
    metadata; ``predicted``: every row of the four buffers as :mod:`.graph_rows` predicts them
    from the Case (padded rows included), or None where the release's fill semantics were not
    read (then the real rows of ``positions`` / ``req_pool_indices`` against the batch)."""
    g = rec.graph
    if not g or bucket is None:
        return None
    n = len(fwd.rids)
    pad = bucket - n
    want = {"out_cache_loc": [f for f, _ in rec.alloc] + [0] * pad,
            "seq_lens": [len(st.tokens[rid]) for rid in fwd.rids] + [SEQ_LEN_FILL] * pad}
    real = {"positions": [start for start, _ in fwd.spans],
            "req_pool_indices": g.get("live_req_pool_indices", [])}
    if predicted is not None:
        want, real = dict(predicted), {}
    if (g["bucket"], g["raw_bs"]) != (bucket, n):
        return f"bucket {g['bucket']} for {g['raw_bs']} rows, expected {bucket} for {n}"
    for name, exp in want.items():
        if g[name] != exp:
            return f"{name} buffer {g[name]}, expected {exp}"
    for name, exp in real.items():
        if g[name][:n] != exp:
            return f"{name} buffer's real rows {g[name][:n]}, the batch's {exp}"
    md = g.get("metadata", {})
    exp_md = {k: want.get(k, g[k]) for k in ("out_cache_loc", "seq_lens", "req_pool_indices")}
    for name, exp in exp_md.items():
        if name in md and md[name] != exp:
            return f"the backend's replay metadata {name} {md[name]}, expected {exp}"
    return _in_graph(st, fwd, rec, g.get("in_graph"), pad)


def _in_graph(st, fwd: Forward, rec, ig: dict | None, pad: int) -> str | None:
    """In-graph metadata from the filled buffers: SWA write locations = the allocated SWA slots
    (padded rows 0); each request's read indices begin with its window's SWA slots, newest first."""
    if not ig:
        return None
    exp = [s for _, s in rec.alloc] + [0] * pad
    if ig["swa_out_cache_loc"] != exp:
        return f"the backend's in-graph SWA write locations {ig['swa_out_cache_loc']}, expected {exp}"
    for b, rid in enumerate(fwd.rids):
        toks = st.tokens[rid]
        k = min(len(toks), st.W)
        want = [s for _, s in reversed(toks[len(toks) - k:])]
        got = ig["swa_page_indices"][b][:k]
        if got != want or ig["swa_topk_lengths"][b] < k:
            return (f"request {rid}'s in-graph SWA read indices {got} (read length "
                    f"{ig['swa_topk_lengths'][b]}), its window's SWA slots {want}")
    return None
