"""The oracle of speculative server-level Cases (EAGLE, top-k 1): plain Python over the Case's plan
and the observed allocation, never the code it judges.

The release's spec-v2 bookkeeping (0.5.22 / 0.5.23) per request: ``committed`` (KV of accepted
tokens) and ``allocated`` (KV slots held). A prefill allocates and commits the prompt. Each DECODE
is one iteration, each bullet the check of that name:

* ``spec_alloc``: before the verify, ``nxt - allocated`` fresh slots, ``nxt = max(allocated,
  ceil_page(committed + 2 * R))``, ``R = max(steps * topk, num_draft_tokens)``, handed out in
  batch order at positions ``allocated..nxt-1``, each outside page 0 and held by no live request;
* ``draft_decode``: the draft's ``steps - 1`` decode forwards: step ``k`` writes position
  ``committed + k`` through its full slot and that token's SWA slot, never dummy slot 0 (spec §9);
* ``verify_rows``: ``num_draft_tokens`` rows per request at positions ``committed..committed+N-1``
  over its full slots, ``seq_lens`` the committed lengths;
* ``verify_graph`` (decode graphs): the release's TARGET_VERIFY graph runner fills a verify iff
  a captured size holds its batch, in the smallest; its buffers' rows are the verify's, each
  padded request N rows at location 0 / position 0, seq_len 1, request row 0 (spec §5.1);
* ``write_targets``: every target layer stores those rows at their SWA slots (never slot 0 for a
  real row, spec §9.5; a replayed verify's padded rows at the dummy slot 0);
* ``draft_extend``: the draft extend rewrites the verify window (all N rows, spec §5
  DRAFT_EXTEND_V2) through the same slots and positions, never slot 0 for a real row;
* ``spec_accept``: ``committed`` and ``seq_lens`` grow by the accept length, ``allocated`` is
  ``nxt``, ``req_to_token`` maps positions ``0..allocated-1`` (rejected tokens' slots stay
  reserved: spec v2 frees nothing at accept);
* ``window_reads``: each token the verify attends to in the window still maps to its SWA slot;
* ``spec_pool``: after each iteration free full tokens = start less the live requests' slots
  (page-rounded), no page twice in a free list;
* ``spec_leak``: after the run (every request released) free full and SWA tokens are back to
  their start;
* ``pool_bytes``: every SWA slot of every target layer holds the last row stored there.

EXTEND forwards: one allocated token per row (``alloc_count``), stores at their SWA slots. Its own
checks are ``@check(level="server")`` methods of :class:`_Judge` (the core's are
:mod:`swafuzz.server.oracle`'s); ``disabled`` names those not run (one that
would stop the walk lets it go on).
"""

from __future__ import annotations

from swafuzz.features.record import check
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.server.case import ServerCase, ServerConfig
from swafuzz.server.graph_checks import SEQ_LEN_FILL
from swafuzz.server.graph_rows import ReqSlots, fill_semantics
from swafuzz.server.observation import ServerObs
from swafuzz.server.oracle import ServerFailure, observed_plan, rows
from swafuzz.server.timeline import Forward, Release, Retract, RetractionError


def reserve(c: ServerConfig) -> int:
    """The release's per-decode KV reserve: twice what one decode may allocate."""
    return 2 * max(c.speculative_num_steps * c.speculative_eagle_topk,
                   c.speculative_num_draft_tokens)


class _On:
    """The server checks on: every one but the ``disabled`` names."""

    def __init__(self, disabled):
        self.disabled = frozenset(disabled)

    def __contains__(self, name: str) -> bool:
        return name not in self.disabled


class _Req:
    def __init__(self):
        self.slots: list[tuple[int, int]] = []  # by position: (full, swa)
        self.committed = 0


def server_judge(case: ServerCase, obs: ServerObs, graphs: bool,
                 disabled) -> list[ServerFailure] | None:
    """The failures of a speculative Case (hook ``oracle.server_judge``), or None for another
    (attention-DP ranks are ``dp``'s; the records refuse speculative decoding on them)."""
    return judge(case, obs, disabled) if case.config.speculative_algorithm and not obs.ranks \
        else None


def judge(case: ServerCase, obs: ServerObs, disabled=frozenset()) -> list[ServerFailure]:
    """Every failure of a speculative Case's observation, earliest first (a run the pipeline
    stopped with an error: what it observed first, then ``contracts``; ``disabled``: server
    checks not run)."""
    on = _On(disabled)
    raised = [] if obs.error is None or "contracts" not in on else [
        ServerFailure("contracts", None, f"the pipeline raised: {obs.error}")]
    try:
        events = observed_plan(case, obs)
    except RetractionError as e:
        return [ServerFailure("retraction", None, str(e))] if "retraction" in on else []
    j = _Judge(case, obs, on)
    for ev in events:
        if isinstance(ev, (Release, Retract)):
            for rid in ev.rids:
                j.reqs.pop(rid, None)
            j.slots.free(ev.rids)
            continue
        stopped = obs.error is not None
        if ev.index not in j.recs or (stopped and ev.mode == "DECODE" and ev.index not in j.spec):
            if obs.out_of_scope is not None or stopped:
                return j.out + raised
            return j.out + [f for f in [ServerFailure(
                "alloc_count", ev.index, f"forward {ev.index} ({ev.mode}) was not observed")]
                if f.check in on]
        bad = j.extend(ev) if ev.mode == "EXTEND" else j.iteration(ev)
        if bad:
            return j.out + [f for f in [bad] if f.check in on] + raised
    if obs.out_of_scope is None and obs.error is None:
        j.finish()
    return j.out + raised


class _Judge:
    def __init__(self, case: ServerCase, obs: ServerObs, on: _On):
        self.case, self.obs, self.on = case, obs, on
        self.P, self.W = case.config.page_size, case.model.sliding_window
        self.N = case.config.speculative_num_draft_tokens
        self.recs = {f.index: f for f in obs.forwards}
        self.spec = {s["index"]: s for s in obs.spec}
        self.reqs: dict[int, _Req] = {}
        self.out: list[ServerFailure] = []
        self.shadow: list[dict[int, bytes]] = [{} for _ in range(case.model.layers)]
        sem = fill_semantics(obs.target_version)  # the release's request-row order, if read
        self.slots = ReqSlots(len(case.requests), sem.slot_order if sem else "tail")
        self.rows_known = sem is not None

    def fail(self, check: str, fwd: int, msg: str) -> None:
        if check in self.on:
            self.out.append(ServerFailure(check, fwd, f"forward {fwd}: {msg}"))

    def take(self, rid: int, alloc: list[list[int]], k: int, n: int, where: str):
        live = {f for r in self.reqs.values() for f, _ in r.slots}
        req = self.reqs.setdefault(rid, _Req())
        for full, swa in alloc[k:k + n]:
            if full < self.P or full in live:
                return f"{where}: request {rid} got full slot {full}: page 0 or held"
            if swa < self.P:
                return f"{where}: request {rid} got SWA slot {swa} in page 0"
            req.slots.append((full, swa))
            live.add(full)
        return None

    def extend(self, ev: Forward) -> ServerFailure | None:
        rec = self.recs[ev.index]
        self.slots.take(ev.rids)
        if len(rec.alloc) != ev.rows:
            return ServerFailure("alloc_count", ev.index, f"forward {ev.index} (EXTEND) "
                                 f"allocated {len(rec.alloc)} tokens for {ev.rows} rows")
        k = 0
        for rid, (start, n) in zip(ev.rids, ev.spans):
            bad = self.take(rid, rec.alloc, k, n, f"forward {ev.index}")
            if bad:
                return ServerFailure("allocation", ev.index, bad)
            k += n
            self.reqs[rid].committed = start + n
        want = [s for _, s in rec.alloc]
        self.stores(ev.index, rec.stores, want, "write_targets", "target")
        return None

    def iteration(self, ev: Forward) -> ServerFailure | None:
        rec, sp, N = self.recs[ev.index], self.spec.get(ev.index), self.N
        if sp is None:
            return ServerFailure("verify_rows", ev.index, f"forward {ev.index}: no verify "
                                 "observed for the DECODE")
        bad = self.spec_alloc(ev, rec)
        if bad:
            return bad
        win = [self.reqs[rid].slots[self.reqs[rid].committed:self.reqs[rid].committed + N]
               for rid in ev.rids]
        full = [f for w in win for f, _ in w]
        swa = [s for w in win for _, s in w]
        pos = [self.reqs[rid].committed + i for rid in ev.rids for i in range(N)]
        self.draft_decode(ev, sp.get("draft", []))
        self.verify_rows(ev, sp["verify"], full, pos)
        pad = self.verify_graph(ev, sp["verify"], full, pos)
        replayed = sp["verify"].get("exec") == "graph"  # padded rows write the dummy slot
        self.stores(ev.index, sp["verify"]["stores"], swa + [0] * pad * N if replayed else swa,
                    "write_targets", "target", real=len(swa))
        self.draft_extend(ev, sp["draft_extend"], full, pos)
        self.stores(ev.index, sp["draft_extend"]["stores"], swa, "draft_extend", "draft")
        self.windows(ev, rec.mapping)
        self.pool(ev.index, sp.get("free"))
        self.spec_accept(ev, sp)
        return None

    @check("spec_alloc", level="server")
    def spec_alloc(self, ev: Forward, rec) -> ServerFailure | None:
        """The verify's reserve: its size per request, then each slot (module docstring)."""
        R, P = reserve(self.case.config), self.P
        need = []
        for rid in ev.rids:
            r = self.reqs[rid]
            nxt = max(len(r.slots), -(-(r.committed + R) // P) * P)
            need.append(nxt - len(r.slots))
        if len(rec.alloc) != sum(need):
            return ServerFailure("spec_alloc", ev.index, f"forward {ev.index}: the reserve "
                                 f"allocated {len(rec.alloc)} tokens, expected {sum(need)} "
                                 f"({need} per request)")
        k = 0
        for rid, n in zip(ev.rids, need):
            bad = self.take(rid, rec.alloc, k, n, f"forward {ev.index} reserve")
            if bad:
                return ServerFailure("spec_alloc", ev.index, bad)
            k += n
        return None

    @check("draft_decode", level="server")
    def draft_decode(self, ev: Forward, draft: list[dict]) -> None:
        for k, step in enumerate(draft):  # the draft's decode forwards
            at = [self.reqs[rid].slots[self.reqs[rid].committed + k] for rid in ev.rids]
            if step["out_cache_loc"] != [f for f, _ in at]:
                self.fail("draft_decode", ev.index, f"draft step {k}'s out_cache_loc "
                          f"{step['out_cache_loc']}, expected the full slots at committed + "
                          f"{k} {[f for f, _ in at]}")
            self.stores(ev.index, step["stores"], [s for _, s in at], "draft_decode", "draft")
        if len(draft) != self.case.config.speculative_num_steps - 1:
            self.fail("draft_decode", ev.index, f"{len(draft)} draft decode "
                      f"forwards, expected speculative_num_steps - 1")

    @check("verify_rows", level="server", defence=(
        "a verify row at another location than the reserve's also stores there "
        "(write_targets), and the draft extend rewrites the same window (draft_extend); "
        "this names the verify batch's field"))
    def verify_rows(self, ev: Forward, v: dict, full: list[int], pos: list[int]) -> None:
        lens = [self.reqs[rid].committed for rid in ev.rids]
        for name, got, exp in (("out_cache_loc", v["out_cache_loc"], full),
                               ("positions", v["positions"], pos), ("seq_lens", v["seq_lens"], lens)):
            if got != exp:
                self.fail("verify_rows", ev.index, f"the verify batch's {name} {got}, expected "
                          f"{exp} ({self.N} draft tokens per request)")

    @check("verify_graph", level="server")
    def verify_graph(self, ev: Forward, v: dict, full: list[int], pos: list[int]) -> int:
        """With decode graphs: the release's target verify graph runner takes the batch iff a
        captured size holds it, the smallest such (the bucket); its buffers' bucket rows are the
        verify's rows, then per padded request N rows at location 0 / position 0, seq_len the
        fill value and request row 0 (the registry's padding policies, spec §5.1). Returns the
        padded requests (0: eager)."""
        c, bs, N = self.case.config, len(ev.rids), self.N
        sizes = () if c.disable_cuda_graph else tuple(c.cuda_graph_bs_decode or ())
        bucket = min((b for b in sizes if b >= bs), default=None)
        g = v.get("graph")
        if bucket is None or g is None:
            if (bucket is None) != (g is None):
                self.fail("verify_graph", ev.index, f"a verify of {bs} requests with captured "
                          f"sizes {list(sizes)}: " + (f"filled bucket {g['bucket']}, expected "
                          "eager" if g is not None else f"eager, expected bucket {bucket}"))
            return 0
        pad = bucket - bs
        exp = {"bucket": bucket, "raw_bs": bs, "out_cache_loc": full + [0] * pad * N,
               "positions": pos + [0] * pad * N,
               "seq_lens": [self.reqs[rid].committed for rid in ev.rids] + [SEQ_LEN_FILL] * pad}
        if self.rows_known:
            exp["req_pool_indices"] = [self.slots.rows.get(r, -1) for r in ev.rids] + [0] * pad
        for name, want in exp.items():
            if g.get(name) != want:
                self.fail("verify_graph", ev.index, f"the verify graph runner's {name} after its "
                          f"fill {g.get(name)}, expected {want} ({bs} requests in bucket "
                          f"{bucket}, {N} rows each)")
        return pad

    @check("draft_extend", level="server")
    def draft_extend(self, ev: Forward, d: dict, full: list[int], pos: list[int]) -> None:
        for name, got, exp in (("out_cache_loc", d["out_cache_loc"], full),
                               ("positions", d["positions"], pos)):
            if got != exp:
                self.fail("draft_extend", ev.index, f"the draft extend's {name} {got}, "
                          f"expected the verify window's {exp}")

    @check("spec_accept", level="server", defence=(
        "a committed length off the accepted KV changes the next iteration's reserve "
        "(spec_alloc); this names the request and its bookkeeping right after the accept"))
    def spec_accept(self, ev: Forward, sp: dict) -> None:
        for b, (rid, a) in enumerate(zip(ev.rids, ev.accepts)):
            r = self.reqs[rid]
            r.committed += a
            got = (sp["committed"][b], sp["allocated"][b], sp["seq_lens"][b], sp["rows"][b])
            exp = (r.committed, len(r.slots), r.committed, [f for f, _ in r.slots])
            if got != exp:
                self.fail("spec_accept", ev.index, f"request {rid} after accepting {a}: "
                          f"(committed, allocated, seq_len, req_to_token row) {got}, "
                          f"expected {exp}")

    def stores(self, fwd: int, got: list[list[int]], want: list[int], check: str,
               pool: str, real: int | None = None) -> None:
        """Each layer of ``pool`` stored at ``want`` (its first ``real`` rows, default all,
        the requests' rows: never the dummy slot 0)."""
        real = len(want) if real is None else real
        layers = self.case.model.layers if pool == "target" else 1
        if len(got) != layers:
            self.fail(check, fwd, f"{len(got)} {pool} layer stores, expected {layers}")
        for layer, locs in enumerate(got[:layers]):
            if locs != want:
                self.fail(check, fwd, f"{pool} layer {layer} stored at {locs}, expected the "
                          f"rows' SWA slots {want}")
            if 0 in locs[:real]:
                self.fail(check, fwd, f"{pool} layer {layer} stored a real row at the dummy "
                          f"slot 0 ({locs})")
            if pool == "target":
                for slot, row in zip(locs, rows(self.case, fwd, layer, len(locs))):
                    self.shadow[layer][slot] = row

    @check("spec_pool", level="server", defence=(
        "a leak or a slot freed twice during the run also leaves the allocator's totals wrong "
        "after it (spec_leak); this names the iteration where it happened"))
    def pool(self, fwd: int, free: dict | None) -> None:
        """After the iteration: the full pool's free tokens are the run's start less every
        live request's slots (page-rounded: spec v2 frees nothing at accept), and no free list
        holds a page twice."""
        if not free or not self.obs.free:
            return
        held = sum(-(-len(r.slots) // self.P) * self.P for r in self.reqs.values())
        want = self.obs.free["before"][0] - held
        if free["full"] != want:
            self.fail("spec_pool", fwd, f"{free['full']} free full tokens after the accept, "
                      f"expected {want} ({held} held by the live requests)")
        if any(free["dups"]):
            self.fail("spec_pool", fwd, f"free lists hold pages twice (full, SWA): "
                      f"{free['dups']}")

    def windows(self, ev: Forward, mapping: list[int]) -> None:
        for rid in ev.rids:
            r = self.reqs[rid]
            end = r.committed + self.N
            for p in range(max(0, end - self.W), end):
                f, s = r.slots[p]
                got = mapping[f] if 0 <= f < len(mapping) else None
                if got != s:
                    self.fail("window_reads", ev.index, f"request {rid} reads position {p} "
                              f"(full slot {f}) in its window, mapped to SWA slot {got}, "
                              f"stored at {s}")
                    return

    def finish(self) -> None:
        if "spec_leak" in self.on:
            self.leak()
        if "pool_bytes" in self.on:
            self.pool_bytes()

    @check("spec_leak", level="server", defence=(
        "the run's end totals confirm spec_pool's per-iteration count: a leak or double free "
        "shows there first, unless it happens in the last iteration"))
    def leak(self) -> None:
        free = self.obs.free
        if free and any(free.get("dups", ())):
            self.out.append(ServerFailure("spec_leak", None, f"after the run the free lists "
                                          f"hold pages twice (full, SWA): {free['dups']}"))
        if free and free.get("after") != free.get("before"):
            self.out.append(ServerFailure("spec_leak", None, f"after every request left, the "
                                          f"allocator has {free.get('after')} free full / SWA "
                                          f"tokens, {free.get('before')} before the run"))

    def pool_bytes(self) -> None:
        rb, P = self.case.model.row_bytes, self.P
        poison = bytes([POISON_BYTE]) * rb
        for layer, data in enumerate(self.obs.pools):
            for slot in range(P, len(data) // rb):
                got, want = data[slot * rb:(slot + 1) * rb], self.shadow[layer].get(slot, poison)
                if got != want:
                    self.out.append(ServerFailure("pool_bytes", None, f"layer {layer} SWA slot "
                                                  f"{slot}: {got.hex()} != expected {want.hex()}"))
                    break
