"""The server-level oracle: plain Python over the Case's plan and the observed allocation.

From the plan (:mod:`swafuzz.server.timeline`) it knows, per forward, which tokens of which
requests write KV; from the observation only the allocator's choices flow in (as ``observed``
mode does for component Cases), each validated before it is followed:

* ``alloc_count``: one allocated token per row the forward writes;
* ``allocation``: a full slot no live token holds, outside page 0; an SWA slot outside page 0,
  in the same page offset as its full slot, not held by a token the batch still attends to
  (inside the sliding window of a live request); with pages > 1 a request's next token
  continues its last page (full slot + 1) unless that page is full, and a fresh page starts at
  offset 0;
* ``write_targets``: every layer's store received, row for row, the SWA slot chosen for the
  row's token;
* ``batch_shape``: the ForwardBatch's positions are the plan's, its sequence lengths each
  request's length after the forward; with attention TP T > 1 (:func:`attn_tp_rows`) the
  eager rows padded to a multiple of T at position 0 (a DECODE's added requests at length
  ``SEQ_LEN_FILL``), and ``write_targets`` expects the padded rows at the dummy slot 0;
* ``graph_fill``: a graph replay's buffers as the release's replay preparation filled them
  (spec §5.1): the bucket is the smallest captured batch size holding the batch; the rows of
  ``out_cache_loc`` are the forward's allocated full slots, its padded rows 0 (the dummy slot,
  §9.5); ``seq_lens`` the requests' lengths, padded rows ``SEQ_LEN_FILL``; ``positions`` and
  ``req_pool_indices`` the batch's in its real rows (their padded rows are not fixed by the
  spec); the Raw decode metadata the backend's prep built holds the same locations, lengths
  and request rows (§4.4: the live locations padded with 0 to the bucket); where the target
  reports the backend's in-graph metadata: its SWA write locations are the allocated SWA
  slots, padded rows 0, and each request's read indices start with its window's SWA slots;
* ``window_reads``: at every forward, each token its requests' attention reads (the last
  ``sliding_window`` positions of each request in the batch) is the full slot allocated for
  it in the request's ``req_to_token`` row and still mapped to the SWA slot it was stored at
  (spec §9.15: an eviction frontier inside the window leaves reads of slot 0);
* ``pool_bytes``: after the run every SWA slot of every layer holds, byte for byte, the payload
  of the last row stored there (:func:`scenarios.payload.k_rows_bytes`), or the poison byte.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from swafuzz import features as registry
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.scenarios.payload import k_rows_bytes
from swafuzz.server.case import ServerCase
from swafuzz.server.observation import ServerObs
from swafuzz.server.timeline import Forward, Release, Retract, RetractionError, plan


@dataclass(frozen=True)
class ServerFailure:
    check: str
    forward: int | None
    message: str

    def signature(self) -> str:
        return f"server:{self.check}"

    def to_json(self) -> dict:
        return {"check": self.check, "forward": self.forward, "message": self.message}


def rows(case: ServerCase, fwd: int, layer: int, n: int) -> list[bytes]:
    """The ``n`` rows the stub model stores at ``layer`` in forward ``fwd``."""
    rb = case.model.row_bytes
    data = k_rows_bytes("rows", case.payload_seed, fwd, 0, "target", layer, n, rb)
    return [data[i * rb:(i + 1) * rb] for i in range(n)]


class _State:
    def __init__(self, case: ServerCase):
        self.P = case.config.page_size
        self.W = case.model.sliding_window
        self.tokens: dict[int, list[tuple[int, int]]] = {}  # rid -> [(full, swa)] by position

    def live_full(self) -> set[int]:
        return {f for toks in self.tokens.values() for f, _ in toks}

    def protected_swa(self) -> set[int]:
        out = set()
        for toks in self.tokens.values():
            out |= {s for f, s in toks[max(0, len(toks) - self.W):]}
        return out


def _check_alloc(st: _State, fwd: Forward, alloc: list[list[int]]) -> str | None:
    P = st.P
    live, prot = st.live_full(), st.protected_swa()
    k = 0
    for rid, (start, n) in zip(fwd.rids, fwd.spans):
        toks = st.tokens.setdefault(rid, [])
        for pos in range(start, start + n):
            full, swa = alloc[k]
            where = f"request {rid} position {pos} (row {k})"
            k += 1
            if full < P or full in live:
                return f"{where}: full slot {full} is page 0 or held by a live token"
            if swa < P or swa in prot:
                return f"{where}: SWA slot {swa} is page 0 or held by an in-window token"
            if full % P != swa % P:
                return f"{where}: full slot {full} and SWA slot {swa} differ in page offset"
            if P > 1 and toks and toks[-1][0] % P != P - 1 and full != toks[-1][0] + 1:
                return f"{where}: full slot {full} does not continue slot {toks[-1][0]}'s page"
            if P > 1 and (not toks or toks[-1][0] % P == P - 1) and full % P:
                return f"{where}: a fresh page starts at offset {full % P}, not 0"
            toks.append((full, swa))
            live.add(full)
            prot = st.protected_swa()
    return None


def graph_bucket(case: ServerCase, mode: str, bs: int, graphs: bool) -> int | None:
    """The decode graph bucket a forward replays (None: eager): graphs captured
    (``disable_cuda_graph`` false, batch sizes given), an executor with graphs, a DECODE batch,
    and the smallest captured batch size that holds it."""
    c = case.config
    if not graphs or c.disable_cuda_graph or not c.cuda_graph_bs_decode or mode != "DECODE":
        return None
    return min((b for b in c.cuda_graph_bs_decode if b >= bs), default=None)


#: the sequence length the release pads a batch's added requests with (DeepSeek-V4's attention
#: backend's graph fill value, spec §5.4 (4))
SEQ_LEN_FILL = 1


def attn_tp_rows(case: ServerCase, mode: str, rows: int, bs: int, exec_: str):
    """The rows and batch size an eager forward runs with after the MLP sync's padding (spec
    §5.4): with attention TP T > 1 the token count rounds up to a multiple of T, a DECODE's
    batch size with it; None without padding."""
    T = case.config.attn_tp_size()
    if T == 1 or exec_ != "eager":
        return None
    padded = -(-rows // T) * T
    return padded, (padded if mode == "DECODE" else bs)


def _batch_shape(case: ServerCase, st: _State, fwd: Forward, rec, pad=None) -> str | None:
    pos = [p for start, n in fwd.spans for p in range(start, start + n)]
    lens = [len(st.tokens[rid]) for rid in fwd.rids]
    pad = pad or attn_tp_rows(case, fwd.mode, len(pos), len(lens), rec.exec)
    if pad is not None:  # padded rows at position 0, added requests at the fill length
        pos = pos + [0] * (pad[0] - len(pos))
        lens = lens + [SEQ_LEN_FILL] * (pad[1] - len(lens))
    if rec.positions and rec.positions != pos:
        return f"positions {rec.positions}, the plan's {pos}"
    if rec.seq_lens and rec.seq_lens != lens:
        return f"seq_lens {rec.seq_lens}, expected {lens}"
    return None


def _graph_fill(case: ServerCase, st: _State, fwd: Forward, rec, bucket: int | None
                ) -> str | None:
    g = rec.graph
    if not g or bucket is None:
        return None
    n = len(fwd.rids)
    pad = bucket - n
    want = {"out_cache_loc": [f for f, _ in rec.alloc] + [0] * pad,
            "seq_lens": [len(st.tokens[rid]) for rid in fwd.rids] + [SEQ_LEN_FILL] * pad}
    real = {"positions": [start for start, _ in fwd.spans],
            "req_pool_indices": g.get("live_req_pool_indices", [])}
    if (g["bucket"], g["raw_bs"]) != (bucket, n):
        return f"bucket {g['bucket']} for {g['raw_bs']} rows, expected {bucket} for {n}"
    for name, exp in want.items():
        if g[name] != exp:
            return f"{name} buffer {g[name]}, expected {exp}"
    for name, exp in real.items():
        if g[name][:n] != exp:
            return f"{name} buffer's real rows {g[name][:n]}, the batch's {exp}"
    md = g.get("metadata", {})
    exp_md = dict(want, req_pool_indices=g["req_pool_indices"])
    for name, exp in exp_md.items():
        if name in md and md[name] != exp:
            return f"the backend's replay metadata {name} {md[name]}, expected {exp}"
    return _in_graph(st, fwd, rec, g.get("in_graph"), pad)


def _in_graph(st: _State, fwd: Forward, rec, ig: dict | None, pad: int) -> str | None:
    """The backend's in-graph metadata built from the filled buffers: the SWA write locations
    the forward's allocated SWA slots, padded rows 0; per request its read indices begin with
    the SWA slots of its last ``sliding_window`` tokens, newest first (older entries, up to
    the release's own window constant, are not the Case's)."""
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


def _window_reads(st: _State, fwd: Forward, rec) -> str | None:
    mapping = rec.mapping
    for b, rid in enumerate(fwd.rids):
        toks = st.tokens[rid]
        lo = max(0, len(toks) - st.W)
        if rec.window_rows and rec.window_rows[b] != [f for f, _ in toks[lo:]]:
            return (f"request {rid}'s req_to_token row holds {rec.window_rows[b]} for positions "
                    f"{lo}..{len(toks) - 1}, allocated {[f for f, _ in toks[lo:]]}")
        for pos in range(lo, len(toks)):
            full, swa = toks[pos]
            got = mapping[full] if 0 <= full < len(mapping) else None
            if got != swa:
                return (f"request {rid} reads position {pos} (full slot {full}) in its window, "
                        f"mapped to SWA slot {got}, stored at {swa}")
    return None


def observed_plan(case: ServerCase, obs: ServerObs) -> list:
    """The Case's plan (:func:`~swafuzz.server.timeline.plan`) with the retractions and
    admissions the release decided as observed (raises ``RetractionError`` on an impossible
    one)."""
    return plan(case, {int(k): (tuple(v[0]), tuple(v[1])) for k, v in obs.retractions.items()},
                {int(k): v for k, v in obs.admissions.items()})


def judge(case: ServerCase, obs: ServerObs, graphs: bool = False,
          pads: dict | None = None) -> list[ServerFailure]:
    """Every failure of ``obs`` against the Case, earliest forward first (``graphs``: the
    executor replays graphs; ``pads``: forward index -> ``(mode, rows, batch size)`` the
    forward runs with after another padding than attention TP's: an attention-DP rank's)."""
    out: list[ServerFailure] = []
    # encoder replay: the stores go to the request window's workspace, never the SWA pool
    win = (registry.hook("server.window_oracle")(case)
           if case.config.enable_encoder_swa_bounded_replay else None)
    raised = ([ServerFailure("contracts", None, f"the pipeline raised: {obs.error}")]
              if obs.error is not None else [])
    if raised and win is None:
        return raised
    # under a window the forwards before the one that raised (the release's own invariant
    # checks run there) are judged first: the raise is often their consequence
    st = _State(case)
    layers = case.model.layers
    shadow: list[dict[int, bytes]] = [{} for _ in range(layers)]
    recs = {f.index: f for f in obs.forwards}
    try:
        events = observed_plan(case, obs)
    except RetractionError as e:
        return [ServerFailure("retraction", None, str(e))]
    for ev in events:
        if isinstance(ev, Release):
            for rid in ev.rids:
                st.tokens.pop(rid, None)
                if win is not None:
                    win.release(rid)
            continue
        if isinstance(ev, Retract):  # validated, then followed: the requests' KV is freed
            stray = [r for r in ev.rids if r not in st.tokens]
            if stray:
                return out + [ServerFailure("retraction", None, f"step {ev.step}: retracted "
                                            f"{stray}, which hold no KV")]
            for rid in ev.rids:
                st.tokens.pop(rid, None)
                if win is not None:
                    win.release(rid)
            continue
        if ev.mode == "DECODE" and not ev.rids:
            return out + [ServerFailure("retraction", ev.index, f"step {ev.step}: the release "
                                        "retracted every running request (it keeps one)")]
        rec = recs.get(ev.index)
        if rec is None and (obs.out_of_scope is not None or raised):
            break  # the run stopped where the pipeline does not go (or raised): judge what ran
        if rec is None:
            return out + [ServerFailure("alloc_count", ev.index, f"forward {ev.index} "
                                        f"({ev.mode}) was not observed")]
        rank_pad = (pads or {}).get(ev.index)
        mode = rank_pad[0] if rank_pad else ev.mode
        if rec.mode != mode:
            out.append(ServerFailure("exec_path", ev.index, f"forward {ev.index} ran as "
                                     f"{rec.mode}, the plan says {mode}"))
        if len(rec.alloc) != ev.rows:
            return out + [ServerFailure("alloc_count", ev.index, f"forward {ev.index} "
                                        f"({ev.mode}) allocated {len(rec.alloc)} tokens for "
                                        f"{ev.rows} rows")]
        bad = _check_alloc(st, ev, rec.alloc)
        if bad:
            return out + [ServerFailure("allocation", ev.index, f"forward {ev.index}: {bad}")]
        want = [s for _, s in rec.alloc]
        bucket = graph_bucket(case, ev.mode, len(ev.rids), graphs)
        if rec.exec != ("eager" if bucket is None else "graph"):
            out.append(ServerFailure("exec_path", ev.index, f"forward {ev.index} ({ev.mode}, "
                                     f"batch {len(ev.rids)}) ran {rec.exec}, expected "
                                     f"{'eager' if bucket is None else f'graph bucket {bucket}'}"))
        bad = _graph_fill(case, st, ev, rec, bucket)
        if bad:
            out.append(ServerFailure("graph_fill", ev.index, f"forward {ev.index}: {bad}"))
        padded = want + [0] * ((bucket or 0) - len(want))  # padded rows: the dummy slot 0
        tp_pad = rank_pad[1:] if rank_pad else attn_tp_rows(case, ev.mode, len(want),
                                                            len(ev.rids), rec.exec)
        if tp_pad is not None:  # the MLP sync's padding: its rows write the dummy slot 0
            padded = want + [0] * (tp_pad[0] - len(want))
        if len(rec.stores) != layers:
            out.append(ServerFailure("write_targets", ev.index, f"forward {ev.index}: "
                                     f"{len(rec.stores)} layer stores, expected {layers}"))
        total = len(padded) if tp_pad is not None else len(want)
        wev = replace(ev, mode=mode)  # the batch as the window runs it
        per_layer = win.stores(wev, total) if win is not None else None  # workspace rows
        for layer, got in enumerate(rec.stores[:layers]):
            exp = (per_layer[layer] if per_layer is not None
                   else padded if rec.exec == "graph" or tp_pad is not None else want)
            if got != exp:
                diff = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b),
                            min(len(got), len(exp)))
                out.append(ServerFailure(
                    "write_targets", ev.index, f"forward {ev.index} layer {layer}: row {diff} "
                    f"stored at {got[diff] if diff < len(got) else 'nothing'}, expected "
                    f"{exp[diff] if diff < len(exp) else 'nothing'} ({len(got)} rows stored, "
                    f"{len(exp)} expected)"))
        bad = _batch_shape(case, st, ev, rec, tp_pad if rank_pad else None)
        if bad:
            out.append(ServerFailure("batch_shape", ev.index, f"forward {ev.index}: {bad}"))
        if rec.mapping:
            bad = _window_reads(st, ev, rec)
            if bad:
                out.append(ServerFailure("window_reads", ev.index, f"forward {ev.index}: {bad}"))
        if win is not None:
            out += [ServerFailure(c, ev.index, f"forward {ev.index}: {m}")
                    for c, m in win.forward(wev, rec, total)]
            continue
        for layer in range(layers):
            for slot, row in zip(want, rows(case, ev.index, layer, len(want))):
                shadow[layer][slot] = row
    if raised:
        return out + raised
    out += _pool_failures(case, obs, shadow)
    return out


def _pool_failures(case: ServerCase, obs: ServerObs,
                   shadow: list[dict[int, bytes]]) -> list[ServerFailure]:
    rb, P = case.model.row_bytes, case.config.page_size
    poison = bytes([POISON_BYTE]) * rb
    out = []
    if len(obs.pools) != case.model.layers:
        return [ServerFailure("pool_bytes", None, f"{len(obs.pools)} layer pools observed, "
                              f"expected {case.model.layers}")]
    for layer, data in enumerate(obs.pools):
        for slot in range(P, len(data) // rb):
            got = data[slot * rb:(slot + 1) * rb]
            want = shadow[layer].get(slot, poison)
            if got != want:
                out.append(ServerFailure("pool_bytes", None, f"layer {layer} SWA slot {slot}: "
                                         f"{got.hex()} != expected {want.hex()}"))
                break
    return out
