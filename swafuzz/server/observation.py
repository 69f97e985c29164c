"""What a server-level run observed, as plain data (filled by a target's pipeline, read by
:mod:`swafuzz.server.oracle`).

Per forward: the allocator's choices in the order it made them (``alloc``: ``[full slot, SWA
slot]`` per allocated token, the SWA slot read from the release's mapping right after the
call), the SWA locations each layer's store received (``stores``) and how the forward ran
(``exec``: "eager" / "graph") and the full -> SWA mapping its attention reads (``mapping``).
After the run: every layer's SWA pool bytes in slot order.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ForwardRec:
    index: int
    mode: str
    alloc: list[list[int]] = field(default_factory=list)
    stores: list[list[int]] = field(default_factory=list)
    exec: str = "eager"
    #: the full -> SWA mapping as the forward's attention reads it (after its stores)
    mapping: list[int] = field(default_factory=list)
    #: the ForwardBatch's per-row positions and per-request sequence lengths
    positions: list[int] = field(default_factory=list)
    seq_lens: list[int] = field(default_factory=list)
    #: per request of the batch (batch order), the full slots its req_to_token row holds for
    #: its last ``sliding_window`` positions (what its attention gathers)
    window_rows: list[list[int]] = field(default_factory=list)
    #: a graph replay's filled buffers: ``bucket``, ``raw_bs``, ``out_cache_loc`` /
    #: ``seq_lens`` / ``positions`` / ``req_pool_indices`` rows, ``live_req_pool_indices``, the
    #: Raw decode ``metadata`` the prep left; empty when eager
    graph: dict = field(default_factory=dict)
    #: encoder replay's window record: request ``slots`` (batch order), ``groups``, per layer
    #: ``history_tags``, the ring's ``ring_tags`` / ``bytes_after`` after the commits,
    #: ``zero_row``, ``capacity``, ``rows`` (padding in); None without a window
    window: dict | None = None
    #: the allocator's free ``[full, SWA]`` tokens as the forward ran (after its allocation)
    free: list[int] = field(default_factory=list)


@dataclass
class ServerObs:
    target_version: str = ""
    forwards: list[ForwardRec] = field(default_factory=list)
    pools: list[bytes] = field(default_factory=list)
    error: str | None = None
    #: step -> [the requests the release's retract_decode sent back before that step's DECODE,
    #: the requests it kept, in its running batch's new order]
    retractions: dict[int, list[list[int]]] = field(default_factory=dict)
    #: step -> how many of the offered requests the (modelled) adder admitted, where fewer
    #: than all fit the free tokens (0: deferred)
    admissions: dict[int, int] = field(default_factory=dict)
    #: the run stopped where the pipeline does not go: what ran is judged
    out_of_scope: str | None = None
    hops: list[str] = field(default_factory=list)
    #: speculative decoding: per iteration (a DECODE) what the verify and the draft extend
    #: held and stored, and each request's committed / allocated KV after the accept
    spec: list[dict] = field(default_factory=list)
    #: the allocator's free ``[full, SWA]`` tokens before and after the run (``before`` /
    #: ``after``)
    free: dict = field(default_factory=dict)
    #: step -> the allocator's free ``[full, SWA]`` tokens after that step's releases
    release_free: dict[int, list[int]] = field(default_factory=dict)
    #: with attention-DP ranks, one observation per rank (its requests renumbered in their
    #: order); the fields above then stay empty
    ranks: list[ServerObs] = field(default_factory=list)
    #: with a prefix (radix) cache: ``hits`` (step -> {request: tokens its match covered}),
    #: per forward the allocator's free lists and each request's ``req_to_token`` row, the free
    #: lists after the run once the tree is evicted (the owning feature's record)
    tree: dict = field(default_factory=dict)
    #: forward index -> how the release's model runner dispatched it (``entry``: "graph" or
    #: its eager ``_execute_*``; ``batch_size`` handed to the model; ``metadata_of``: the
    #: forward whose batch built the attention metadata the backend holds after it, None: none)
    dispatch: dict[int, dict] = field(default_factory=dict)
    #: attention-DP ranks: this rank's IDLE forwards (step, rows, stores, dispatch record)
    idles: list[dict] = field(default_factory=list)
    #: the decode side of PD disaggregation: ``taken`` (step -> requests the release's prealloc
    #: queue admitted), ``records`` (request -> its pre-allocation), ``reads`` (forward -> per
    #: request the window's KV bytes it reads, per position and layer) (the owning feature's)
    takeover: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"target_version": self.target_version, "error": self.error,
                "out_of_scope": self.out_of_scope, "retractions": self.retractions,
                "admissions": self.admissions,
                "forwards": [{"index": f.index, "mode": f.mode, "alloc": f.alloc,
                              "stores": f.stores, "exec": f.exec, "positions": f.positions,
                              "seq_lens": f.seq_lens, "window_rows": f.window_rows,
                              **({"free": f.free} if f.free else {}),
                              **({"graph": f.graph} if f.graph else {}),
                              **({} if f.window is None else {"window": {
                                  k: v for k, v in f.window.items() if k != "bytes_after"}})}
                             for f in self.forwards],
                **({"spec": self.spec, "free": self.free} if self.spec or self.free else {}),
                **({"release_free": self.release_free} if self.release_free else {}),
                **({"ranks": [o.to_json() for o in self.ranks]} if self.ranks else {}),
                **({"tree": self.tree} if self.tree else {}),
                **({"dispatch": self.dispatch} if self.dispatch else {}),
                **({"idles": self.idles} if self.idles else {}),
                **({"takeover": self.takeover} if self.takeover else {})}
