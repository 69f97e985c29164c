"""The server-level oracle: plain Python over the Case's plan and the observed allocation.

The plan (:mod:`swafuzz.server.timeline`) says which requests' tokens write KV at each forward;
only the allocator's choices come from the observation (like ``observed`` mode), each validated
before it is followed. Checks:

* ``alloc_count``: one allocated token per row written;
* ``allocation``: full slot held by no live token, outside page 0; SWA slot outside page 0, at
  its full slot's page offset, not held by a token still inside a live request's window; with
  pages > 1 a request's next token continues its last page (full slot + 1) unless full, and a
  fresh page starts at offset 0;
* ``write_targets``: each layer's store got, row for row, the SWA slot of the row's token;
* ``batch_shape``: positions are the plan's, seq lens each request's length after the forward;
  with attention TP T > 1 (``dp``'s ``attn_tp_rows``) eager rows are padded to a multiple of T
  at position 0 (a DECODE's added requests at ``SEQ_LEN_FILL``, written at dummy slot 0);
* ``graph_fill`` (spec §5.1): bucket = smallest captured batch size holding the batch;
  ``out_cache_loc`` rows the allocated full slots, padded rows 0 (§9.5); ``seq_lens`` the
  lengths, padded ``SEQ_LEN_FILL``; ``positions`` the plan's, ``req_pool_indices`` each
  request's ``ReqToTokenPool`` row, padded rows as the release's fill leaves them
  (:mod:`.graph_rows`, every row predicted from the Case); the Raw decode metadata holds the same (§4.4: live locations padded with 0); reported
  in-graph metadata: SWA write locations the allocated SWA slots (padded 0), each request's
  read indices start with its window's SWA slots;
* ``window_reads``: each token in a request's last ``sliding_window`` positions is the full slot
  in its ``req_to_token`` row, still mapped to the SWA slot it was stored at (§9.15: a frontier
  inside the window leaves reads of slot 0);
* ``kv_held`` (:mod:`.held_checks`): free full tokens after every allocation and release =
  the start less the live requests' pages; both sides back to their start after the run;
* ``model_dispatch`` (:mod:`.dispatch_checks`): the runner entry, batch size and metadata owner
  the release's model-runner dispatch gave each forward;
* ``pool_bytes``: after the run every SWA slot of every layer holds the payload of the last row
  stored there (:func:`scenarios.payload.k_rows_bytes`) or the poison byte.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from swafuzz import features as registry
from swafuzz.features.record import check
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.scenarios.payload import k_rows_bytes
from swafuzz.server.case import ServerCase
from swafuzz.server.dispatch_checks import forward_dispatch
from swafuzz.server.graph_checks import (  # noqa: F401 - graph_bucket: from here too
    SEQ_LEN_FILL,
    batch_shape,
    graph_bucket,
    graph_fill,
    sync_pad,
)
from swafuzz.server.graph_rows import GraphRows
from swafuzz.server.held_checks import kv_end, kv_held
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


    def take(self, fwd: Forward, alloc: list[list[int]]) -> None:
        """Follow the forward's allocation: each row's token joins its request."""
        k = 0
        for rid, (_start, n) in zip(fwd.rids, fwd.spans):
            self.tokens.setdefault(rid, []).extend(tuple(a) for a in alloc[k:k + n])
            k += n


@check("allocation", level="server")
def allocation(st: _State, fwd: Forward, alloc: list[list[int]]) -> str | None:
    """The allocator's choices of a forward (module docstring), on a copy of the walk's state
    (the walk follows the allocation itself: :meth:`_State.take`)."""
    st = _copy(st)
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


#: the walk's state under its public name (a feature's own walk, e.g. over a tree cache's rows)
State = _State


def _copy(st: _State) -> _State:
    out = object.__new__(_State)
    out.P, out.W = st.P, st.W
    out.tokens = {r: list(t) for r, t in st.tokens.items()}
    return out


@check("window_reads", level="server")
def window_reads(st: _State, fwd: Forward, rec) -> str | None:
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


def _at(by_step: dict, step: int):
    """A per-step observation (keys are strings after a JSON round trip)."""
    return by_step.get(step, by_step.get(str(step)))


def observed_plan(case: ServerCase, obs: ServerObs) -> list:
    """The Case's plan (:func:`~swafuzz.server.timeline.plan`) with the retractions, admissions
    and prefix-cache hits the release decided as observed (raises ``RetractionError`` on an
    impossible one)."""
    hits = {int(t): {int(r): int(n) for r, n in v.items()}
            for t, v in obs.tree.get("hits", {}).items()}
    return plan(case, {int(k): (tuple(v[0]), tuple(v[1])) for k, v in obs.retractions.items()},
                {int(k): v for k, v in obs.admissions.items()}, hits)


@check("contracts", level="server")
def contracts(obs: ServerObs) -> list[ServerFailure]:
    """The pipeline raised (the release's own invariant checks among others)."""
    return ([ServerFailure("contracts", None, f"the pipeline raised: {obs.error}")]
            if obs.error is not None else [])


@check("retraction", level="server")
def retraction(st: _State, ev) -> str | None:
    """A retraction the plan cannot follow: requests that hold no KV, or every running request
    of a DECODE (the release keeps one)."""
    if not isinstance(ev, Retract):
        return None
    stray = [r for r in ev.rids if r not in st.tokens]
    if stray:
        return f"step {ev.step}: retracted {stray}, which hold no KV"
    if not ev.kept:
        return (f"step {ev.step}: the release retracted every running request {list(ev.rids)} "
                "(it keeps one)")
    return None


@check("alloc_count", level="server")
def alloc_count(ev: Forward, rec) -> str | None:
    """One allocated token per row the forward writes (and the forward observed at all)."""
    if rec is None:
        return f"forward {ev.index} ({ev.mode}) was not observed"
    if len(rec.alloc) != ev.rows:
        return (f"forward {ev.index} ({ev.mode}) allocated {len(rec.alloc)} tokens for "
                f"{ev.rows} rows")
    return None


@check("exec_path", level="server")
def exec_path(ev: Forward, rec, mode: str, bucket: int | None = None,
              graphs: bool = False) -> str | None:
    """The forward ran as the plan's mode (``graphs`` false) or on the path the graph decision
    gives (``graphs`` true: eager, or the graph bucket)."""
    if not graphs:
        return (None if rec.mode == mode else
                f"forward {ev.index} ran as {rec.mode}, the plan says {mode}")
    if rec.exec == ("eager" if bucket is None else "graph"):
        return None
    return (f"forward {ev.index} ({ev.mode}, batch {len(ev.rids)}) ran {rec.exec}, expected "
            f"{'eager' if bucket is None else f'graph bucket {bucket}'}")


@check("write_targets", level="server", defence=(
    "a store at another slot than the allocated one also leaves that slot's bytes wrong "
    "(pool_bytes) or a later read unmapped (window_reads); this check names the forward, "
    "layer and row where it happened"))
def write_targets(ev: Forward, rec, layers: int, expected: list[list[int]]) -> list[str]:
    """Every layer's store received its ``expected`` rows, row for row."""
    out = []
    if len(rec.stores) != layers:
        out.append(f"forward {ev.index}: {len(rec.stores)} layer stores, expected {layers}")
    for layer, got in enumerate(rec.stores[:layers]):
        exp = expected[layer]
        if got != exp:
            diff = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b),
                        min(len(got), len(exp)))
            out.append(f"forward {ev.index} layer {layer}: row {diff} stored at "
                       f"{got[diff] if diff < len(got) else 'nothing'}, expected "
                       f"{exp[diff] if diff < len(exp) else 'nothing'} ({len(got)} rows "
                       f"stored, {len(exp)} expected)")
    return out


def judge(case: ServerCase, obs: ServerObs, graphs: bool = False,
          pads: dict | None = None, disabled=frozenset()) -> list[ServerFailure]:
    """Every failure of ``obs``, earliest forward first; ``pads``: forward -> ``(mode, rows,
    batch size)`` after an attention-DP rank's padding; ``disabled``: checks not run."""
    out: list[ServerFailure] = []

    def fail(name: str, fwd: int | None, msgs, prefix: bool = False) -> bool:
        """Record check ``name``'s messages unless disabled (``prefix``: each led by
        ``forward N:``); whether it failed (and is on)."""
        msgs = [m for m in ([msgs] if isinstance(msgs, str) else msgs or []) if m]
        if prefix:
            msgs = [f"forward {fwd}: {m}" for m in msgs]
        if name not in disabled:
            out.extend(ServerFailure(name, fwd, m) for m in msgs)
        return bool(msgs) and name not in disabled

    # encoder replay: the stores go to the request window's workspace, never the SWA pool
    win = (registry.hook("server.window_oracle")(case)
           if case.config.enable_encoder_swa_bounded_replay else None)
    raised = contracts(obs) if "contracts" not in disabled else []
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
        return [ServerFailure("retraction", None, str(e))] if "retraction" not in disabled else []
    req_rows = GraphRows(case, obs.target_version, SEQ_LEN_FILL)
    for ev in events:
        req_rows.event(ev)  # the request rows: taken by a prefill, freed by a release
        if isinstance(ev, (Release, Retract)):  # a retraction validated, then followed
            if isinstance(ev, Retract) and fail("retraction", None, retraction(st, ev)):
                return out
            for rid in ev.rids:
                st.tokens.pop(rid, None)
                if win is not None:
                    win.release(rid)
            if isinstance(ev, Release):
                fail("kv_held", None, kv_held(case, st.tokens, _at(obs.release_free, ev.step),
                                              f"after step {ev.step}'s releases"))
            continue
        rec = recs.get(ev.index)
        if rec is None and (obs.out_of_scope is not None or obs.error is not None):
            break  # the run stopped where the pipeline does not go (or raised): judge what ran
        if rec is None:
            fail("alloc_count", ev.index, alloc_count(ev, rec))
            return out
        rank_pad = (pads or {}).get(ev.index)
        mode = rank_pad[0] if rank_pad else ev.mode
        fail("exec_path", ev.index, exec_path(ev, rec, mode))
        bad = alloc_count(ev, rec)
        if bad:  # the allocation cannot be followed (a disabled check stops the walk too)
            fail("alloc_count", ev.index, bad)
            return out
        if fail("allocation", ev.index, allocation(st, ev, rec.alloc), prefix=True):
            return out
        st.take(ev, rec.alloc)
        fail("kv_held", ev.index, kv_held(case, st.tokens, rec.free, f"forward {ev.index}"))
        want = [s for _, s in rec.alloc]
        bucket = graph_bucket(case, ev.mode, len(ev.rids), graphs)
        fail("exec_path", ev.index, exec_path(ev, rec, mode, bucket, graphs=True))
        pred = req_rows.replay(st, ev, rec.alloc, bucket if rec.graph else None)
        fail("graph_fill", ev.index, graph_fill(case, st, ev, rec, bucket, pred), prefix=True)
        padded = want + [0] * ((bucket or 0) - len(want))  # padded rows: the dummy slot 0
        tp_pad = rank_pad[1:] if rank_pad else sync_pad(case, ev.mode, len(want), len(ev.rids),
                                                        rec.exec)
        if tp_pad is not None:  # the MLP sync's padding: its rows write the dummy slot 0
            padded = want + [0] * (tp_pad[0] - len(want))
        total = len(padded) if tp_pad is not None else len(want)
        wev = replace(ev, mode=mode)  # the batch as the window runs it
        per_layer = win.stores(wev, total) if win is not None else None  # workspace rows
        each = padded if rec.exec == "graph" or tp_pad is not None else want
        fail("write_targets", ev.index, write_targets(
            ev, rec, layers, per_layer if per_layer is not None else [each] * layers))
        fail("batch_shape", ev.index,
             batch_shape(case, st, ev, rec, tp_pad if rank_pad else None), prefix=True)
        if obs.dispatch:  # the release's model runner dispatched the forwards
            fail("model_dispatch", ev.index, forward_dispatch(
                ev, rec, obs.dispatch.get(ev.index), mode, bucket, tp_pad))
        if rec.mapping:
            fail("window_reads", ev.index, window_reads(st, ev, rec), prefix=True)
        if win is not None:
            for c, m in win.forward(wev, rec, total):
                fail(c, ev.index, f"forward {ev.index}: {m}")
            continue
        for layer in range(layers):
            for slot, row in zip(want, rows(case, ev.index, layer, len(want))):
                shadow[layer][slot] = row
    if obs.error is not None:
        return out + raised
    fail("kv_held", None, kv_end(case, obs))
    if "pool_bytes" not in disabled:
        out += pool_bytes(case, obs, shadow)
    return out


@check("pool_bytes", level="server", defence=(
    "end to end: a pool byte is wrong only where a store went to a wrong slot, which "
    "write_targets sees at its forward; kept as the byte-level confirmation"))
def pool_bytes(case: ServerCase, obs: ServerObs,
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
