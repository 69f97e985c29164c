"""The oracle of decode-side PD Cases (``disaggregation_mode`` "decode"): plain Python over the
Case and the observed allocation, never the code it judges.

The plan (``SEMANTICS.md``): at step t the requests that have all their tokens leave, the
arrivals join the prealloc queue, the queue admits a head of it (observed, ``taken``: the
oracle checks it is taken in arrival order, never before arrival, every request once), each
admitted request is taken over, then every running request (takeover order) decodes one
token: position ``prompt_len + outputs - 1``. Checks:

* ``takeover``: each pre-allocation as :func:`swafuzz.server.takeover.judge_takeover` predicts
  (full slots on fresh pages held by no live token; SWA slots for the window's tail only, from
  the window's start floored to a page, fresh, at their full slot's page offset; every head
  position's mapping 0, a recycled page's too; the free tokens by whole pages), and the
  admission order above;
* ``takeover_reads``: after every DECODE, for each request of the batch, each position of its
  window, each layer: the bytes at the SWA slot the release's mapping gives its row's full
  slot are, bit for bit, the prefill's KV of that position (a prompt position: the Case's
  ``transferred_row``) or the row the DECODE that wrote it stored;
* the core's ``alloc_count``, ``allocation``, ``write_targets`` and ``window_reads`` per DECODE,
  ``kv_held``'s end check (every token free again after the run) and ``pool_bytes`` (every SWA
  slot holds the last row written there, a transferred one included).
"""

from __future__ import annotations

from swafuzz.features.record import check
from swafuzz.scenarios.payload import rows_bytes
from swafuzz.server.held_checks import kv_end
from swafuzz.server.oracle import (
    ServerFailure,
    State,
    alloc_count,
    allocation,
    contracts,
    pool_bytes,
    rows,
    window_reads,
    write_targets,
)
from swafuzz.server.takeover import judge_takeover, tail_start
from swafuzz.server.timeline import Forward


def transferred_row(case, rid: int, layer: int, pos: int) -> bytes:
    """The prefill server's KV row of request ``rid``'s prompt position ``pos`` at ``layer``
    (the Case's input: ``SEMANTICS.md``)."""
    rb = case.model.row_bytes
    return rows_bytes(case.payload_seed, rid, 0, "prefill", layer, pos + 1, rb)[pos * rb:]


def server_judge(case, obs, graphs: bool, disabled) -> list[ServerFailure] | None:
    """The failures of a decode-side Case (hook ``oracle.server_judge``), or None for another."""
    if case.config.disaggregation_mode != "decode" or obs.ranks:
        return None
    return judge(case, obs, disabled)


def _at(d: dict, k: int):
    return d.get(k, d.get(str(k)))


@check("takeover", level="server")
def admission(case, taken: dict) -> str | None:
    """The prealloc queue's admissions: every request once, never before it arrives, in
    arrival (then index) order."""
    order = sorted(range(len(case.requests)), key=lambda r: (case.requests[r].arrive_step, r))
    seq = [(int(t), int(r)) for t, rids in sorted(taken.items(), key=lambda kv: int(kv[0]))
           for r in rids]
    got = [r for _, r in seq]
    if got != order[:len(got)]:
        return f"requests taken over in the order {got}, the queue's (arrival) order is {order}"
    for t, r in seq:
        if t < case.requests[r].arrive_step:
            return f"request {r} taken over at step {t}, before it arrives"
    return None


@check("takeover_reads", level="server", defence=(
    "a transferred row written to another SWA slot than the window's also leaves that slot's "
    "bytes wrong at rest (pool_bytes); this check names the request, position and layer whose "
    "read gets it, while the request runs"))
def takeover_reads(case, st: State, ev: Forward, written: dict, got: dict) -> str | None:
    """What each request of DECODE ``ev`` reads in its window, bit for bit (module docstring);
    ``written``: (request, position) -> (forward, row, rows) of the DECODE that stored it."""
    layers = case.model.layers
    for rid in ev.rids:
        L, n = case.requests[rid].prompt_len, len(st.tokens[rid])
        lo = max(0, n - st.W)
        seen = got.get(rid, got.get(str(rid)))
        if seen is None or len(seen) != n - lo:
            return f"request {rid}: {None if seen is None else len(seen)} window positions " \
                   f"read, expected {n - lo}"
        for k, pos in enumerate(range(lo, n)):
            for layer in range(layers):
                if pos < L:
                    want, what = transferred_row(case, rid, layer, pos), "the transferred KV"
                else:
                    f, b, m = written[(rid, pos)]
                    want, what = rows(case, f, layer, m)[b], f"forward {f}'s row {b}"
                if bytes.fromhex(seen[k][layer]) != want:
                    return (f"request {rid} reads position {pos} (layer {layer}, full slot "
                            f"{st.tokens[rid][pos][0]}) as {seen[k][layer]}, expected {what} "
                            f"{want.hex()}")
    return None


def judge(case, obs, disabled=frozenset()) -> list[ServerFailure]:
    out: list[ServerFailure] = []

    def fail(name, fwd, msgs) -> bool:
        msgs = [m for m in ([msgs] if isinstance(msgs, str) else msgs or []) if m]
        if name in disabled:
            return False
        out.extend(ServerFailure(name, fwd, m) for m in msgs)
        return bool(msgs)

    raised = contracts(obs)
    tk = obs.takeover or {}
    taken, recs = tk.get("taken", {}), tk.get("records", {})
    if fail("takeover", None, admission(case, taken)):
        return out + raised
    st, layers, P = State(case), case.model.layers, case.config.page_size
    shadow: list[dict[int, bytes]] = [{} for _ in range(layers)]
    fwds = {f.index: f for f in obs.forwards}
    written: dict = {}
    outputs: dict[int, int] = {}
    running: list[int] = []
    n_fwd = 0
    last = max([int(t) for t in taken] + [-1])
    for t in range(0, last + sum(r.max_new_tokens for r in case.requests) + 2):
        done = [r for r in running if outputs[r] >= case.requests[r].max_new_tokens]
        for r in done:
            running.remove(r)
            st.tokens.pop(r)
        for rid in [int(r) for r in (_at(taken, t) or ())]:
            rec = _at(recs, rid)
            if rec is None:
                fail("takeover", None, f"request {rid} taken over at step {t}, not recorded")
                return out + raised
            live_swa = st.protected_swa()
            if fail("takeover", None, [f"step {t}: {m}" for m in judge_takeover(
                    case, rid, rec, st.live_full(), live_swa)]):
                return out + raised
            start = tail_start(case, case.requests[rid].prompt_len)
            st.tokens[rid] = [(f, s if p >= start else 0)
                              for p, (f, s) in enumerate(zip(rec["loc"], rec["mapping"]))]
            W, L = case.model.sliding_window, case.requests[rid].prompt_len
            for p in range(max(0, L - W) // P * P if P > 1 else max(0, L - W), L):
                for layer in range(layers):  # the prefill's sender's writes
                    shadow[layer][rec["mapping"][p]] = transferred_row(case, rid, layer, p)
            running.append(rid)
            outputs[rid] = 1
        if not running:
            continue
        rids = tuple(running)
        ev = Forward(t, n_fwd, "DECODE", rids, tuple(
            (case.requests[r].prompt_len + outputs[r] - 1, 1) for r in rids))
        n_fwd += 1
        rec = fwds.get(ev.index)
        if rec is None:
            if obs.error is None and obs.out_of_scope is None:
                fail("alloc_count", ev.index, alloc_count(ev, rec))
            return out + raised
        if fail("alloc_count", ev.index, alloc_count(ev, rec)):
            return out + raised
        if fail("allocation", ev.index, [f"forward {ev.index}: {m}" for m in
                                         [allocation(st, ev, rec.alloc)] if m]):
            return out + raised
        st.take(ev, rec.alloc)
        want = [s for _, s in rec.alloc]
        fail("write_targets", ev.index, write_targets(ev, rec, layers, [want] * layers))
        if rec.mapping:
            fail("window_reads", ev.index, window_reads(st, ev, rec))
        for b, rid in enumerate(rids):
            written[(rid, ev.spans[b][0])] = (ev.index, b, len(rids))
        got = _at(tk.get("reads", {}), ev.index) or {}
        fail("takeover_reads", ev.index, takeover_reads(case, st, ev, written, got))
        for layer in range(layers):
            for slot, row in zip(want, rows(case, ev.index, layer, len(want))):
                shadow[layer][slot] = row
        for r in rids:
            outputs[r] += 1
    if obs.error is not None or obs.out_of_scope is not None:
        return out + raised
    fail("kv_held", None, kv_end(case, obs))
    if "pool_bytes" not in disabled:
        out += pool_bytes(case, obs, shadow)
    return out
