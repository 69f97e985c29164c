"""DSpark target verify and DP-padded EXTEND under a request window, the oracle side (plain
Python; the section of ``SEMANTICS.md`` beside this file) on the window oracle's state
(``win``: :class:`features.request_window.oracle.WindowShadow`) and the shadow allocator
(``sh``). :func:`run_step` claims ``verify`` under a window (eager, or through the TARGET_VERIFY
graph of a bucket equal to the batch: the graph lane gets the capture warm-up's slot-0 tags) and
the DP-padded EXTENDs (``extend`` with ``rank_tokens``, ``dp_decode`` with ``dp_extend``: the
layout of :func:`features.request_window.oracle_layout.padded_layout`). It predicts what the
window oracle predicts for any window forward, so the ``window`` check judges them unchanged."""

from __future__ import annotations

from swafuzz.features.request_window.oracle_layout import WinFwdExp, padded_layout
from swafuzz.oracles.errors import CaseInfeasible
from swafuzz.scenarios.case import Step

__all__ = ["run_step"]


def claims(win, s: Step) -> bool:
    """Whether this module runs step ``s`` (a window pool's verify, a DP-padded EXTEND)."""
    if not win.on:
        return False
    return (s.op == "verify" or (s.op == "extend" and bool(s.rank_tokens) and not s.tail_exec)
            or (s.op == "dp_decode" and s.dp_extend))


def run_step(win, sh, i: int, s: Step) -> bool:
    """Run step ``i`` if it is a window verify or a DP-padded EXTEND (module docstring)."""
    if not claims(win, s):
        if s.op == "extend" and s.rank_tokens and not s.tail_exec:
            raise CaseInfeasible(i, "extend with rank_tokens (a DP-padded EXTEND) needs a request "
                                 "window (pool.request_window > 0)")
        return False
    if win.L:
        raise CaseInfeasible(i, f"{s.op} is not modelled on a request window with a late-layer "
                             "tail (pool.late_layer_start > 0)")
    if s.op == "verify":
        _verify(win, sh, i, s)
    elif s.op == "extend":
        _padded_extend(win, sh, i, s)
    else:
        _padded_decode(win, sh, i, s)
    return True


def _graph_bucket(win, i: int, s: Step, bs: int, T: int) -> int | None:
    """The TARGET_VERIFY graph bucket of a window verify with ``exec == "graph"`` (None: it
    runs eagerly: no bucket fits). Only a bucket equal to the batch is modelled (padded verify
    requests are slot-0 runs reading slot-0 history, whose bytes the contract leaves open)."""
    if s.exec != "graph":
        return None
    B = next((b for b in win.case.graph.buckets if b >= bs), None)
    if B is None:
        return None
    if B != bs:
        raise CaseInfeasible(i, f"verify graph under a request window: bucket {B} > batch {bs} "
                             "(padded verify requests are not modelled; use a batch equal to a "
                             "bucket)")
    if B * win.W + B * T > win.WS:
        raise CaseInfeasible(i, f"verify graph bucket {B} under a request window: its layout of "
                             f"{B * win.W + B * T} rows exceeds the workspace's {win.WS} rows")
    return B


def _verify(win, sh, i: int, s: Step) -> None:
    if s.rank_tokens or s.dp_extend:
        raise CaseInfeasible(i, "verify under a request window with DP attention is not modelled "
                             "(sglang's early verify metadata is off under DP attention)")
    if not s.rids:
        raise CaseInfeasible(i, "verify needs at least one rid")
    T = sh.g.num_draft_tokens
    if win.cap < win.W + T:
        raise CaseInfeasible(i, f"verify under a request window needs a ring capacity >= window + "
                             f"num_draft_tokens = {win.W + T} (got {win.cap}; sglang sizes it "
                             "128 + MTP draft tokens): committed draft rows would overwrite "
                             "in-window positions")
    if s.accept and (len(s.accept) != len(s.rids) or any(not 1 <= a <= T for a in s.accept)):
        raise CaseInfeasible(i, f"accept on verify needs one entry per rid in [1, "
                             f"num_draft_tokens={T}]")
    for rid in s.rids:
        sh.live(i, rid)
    bucket = _graph_bucket(win, i, s, len(s.rids), T)
    sh.check_alloc(i, [(rid, T) for rid in s.rids])
    before = {rid: len(sh.tokens[rid]) for rid in s.rids}
    rows = []
    for rid in s.rids:
        sh.extend(rid, T)
        rows += [(win.slot[rid], before[rid] + j, 0) for j in range(T)]
    if bucket is None:
        _forward(win, i, "TARGET_VERIFY", rows, 0, len(s.rids))
    else:
        _graph_forward(win, i, rows, bucket, T)
    if s.accept:
        sh.reject(s, before)


def _pad_of(i: int, s: Step, real: int) -> int:
    if not s.rank_tokens or len(s.rank_tokens) > 7 or any(t < 0 for t in s.rank_tokens):
        raise CaseInfeasible(i, "a DP-padded EXTEND needs 1..7 other ranks' token counts >= 0")
    return max([real, *s.rank_tokens]) - real


def _padded_extend(win, sh, i: int, s: Step) -> None:
    """``extend`` with ``rank_tokens``: the plain extend's rows (replay fold included), then
    MAX_LEN padding rows."""
    win.check_extend(sh, i, s)
    rows = win.extend_rows(sh, s)[0]
    _forward(win, i, "EXTEND", rows, _pad_of(i, s, len(rows)), len(s.rids))


def _padded_decode(win, sh, i: int, s: Step) -> None:
    """``dp_decode`` with ``dp_extend``: one row per rid (EXTEND of one token), then MAX_LEN
    padding rows."""
    if not s.rids:
        raise CaseInfeasible(i, "dp_extend needs rank_tokens and at least one rid")
    rows = win.decode_rows(sh, i, s.rids)
    _forward(win, i, "EXTEND", rows, _pad_of(i, s, len(rows)), len(s.rids))


def _forward(win, i: int, mode: str, rows, pad: int, groups: int) -> None:
    """One eager window forward on every lane of ``win`` (its eager and graph lanes see the
    same eager forward)."""
    for _ in win.each_lane():
        _forward_lane(win, i, mode, rows, pad, groups)


def _graph_forward(win, i: int, rows, B: int, T: int) -> None:
    """A verify through the TARGET_VERIFY graph of bucket ``B`` (graph lane) and eagerly (the
    eager lane, made at the first graph step as in :meth:`WindowShadow.forward`). The first
    use of the bucket captures it: its warm-up runs the capture state (``B`` requests of slot
    0, positions ``1..T``: ``seq_lens`` fill 1) with a commit, so slot-0 ring rows ``p mod
    cap`` get tag ``p`` for ``p`` in ``1..T`` in every layer."""
    win.fork_eager()
    for k in win.each_lane():
        if k == 0:
            if B not in win.captured["verify"]:
                win.captured["verify"].add(B)
                for t in win.tags:
                    for p in range(1, T + 1):
                        t[p % win.cap] = p
            _forward_lane(win, i, "TARGET_VERIFY", rows, 0, B, bucket=B)
        else:
            _forward_lane(win, i, "TARGET_VERIFY", rows, 0, B)


def _forward_lane(win, i: int, mode: str, rows, pad: int, groups: int,
                  bucket: int | None = None) -> None:
    if win.exp.refused is not None:
        return
    lay = padded_layout(rows, pad, groups, win.W, win.cap, win.Z)
    if win.refuse(i, lay, groups, len(rows) + pad):
        return
    allrows = list(rows) + [(0, 0, 0)] * pad
    locs, wsb = win.run_layers(i, lay, allrows, len(allrows))
    hist = [p if ok else -1 for p, ok in zip(lay.history_pos, lay.history_valid)]  # W5 at use
    win.exp.forwards.append(WinFwdExp(i, 0, mode, False, locs, [], [], wsb, list(lay.commit),
                                      list(lay.runs), bucket, lay.size,
                                      history=[hist] * win.cfg.layers))
