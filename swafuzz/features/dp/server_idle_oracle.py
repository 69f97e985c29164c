"""Attention-DP ranks at server level: the IDLE forwards the oracle predicts (plain Python over
the ranks' plans; spec §5.4, ``SEMANTICS.md``; checked by ``model_dispatch``).

At every step where some rank forwards, each other rank that serves requests runs an IDLE batch
through the MLP sync and its model runner. Over the ranks' token counts (EXTEND rows, DECODE
requests, 0 idle):

* SUM_LEN (some rank extends, no pplx): no padding - an unpadded IDLE (batch size 0, no rows),
  dispatched to ``_execute_idle``, which drops the backend's metadata;
* MAX_LEN with no rank extending: padded to the largest count - an IDLE of that many rows and
  requests, ``_execute_idle`` with the metadata built for it;
* MAX_LEN with a rank extending (pplx): a dummy one-request EXTEND of the largest count,
  ``_execute_extend`` with the metadata built for it.

Every IDLE row is stored at the dummy slot 0. Not predicted under encoder replay (the pipeline
does not run a rank's IDLE there: its store goes through the request window).
"""

from __future__ import annotations

from swafuzz.features.dp.server_convert_oracle import prefill_pad
from swafuzz.server.dispatch_checks import ENTRY, idle_stores, model_dispatch
from swafuzz.server.oracle import ServerFailure


def expected_idles(case, plans: list[list], target_version: str = "") -> list[dict[int, tuple]]:
    """Per rank, step -> ``(mode, rows, batch size, padded)`` of its IDLE forward (module
    docstring; with a prefill graph the ranks' vote may pad MAX_LEN to its bucket:
    :func:`.server_convert_oracle.prefill_pad`); ``plans``: each rank's forwards (empty for a
    rank without requests)."""
    by_step = [{f.step: f for f in p} for p in plans]
    pplx = case.config.moe_a2a_backend == "pplx"
    serving = [bool(r) for r in case_ranks(case)]
    out: list[dict[int, tuple]] = [{} for _ in plans]
    for t in sorted({t for s in by_step for t in s}):
        fw = [s.get(t) for s in by_step]
        counts = [0 if f is None else f.rows if f.mode == "EXTEND" else len(f.rids) for f in fw]
        extend = any(f is not None and f.mode == "EXTEND" for f in fw)
        graph_rows = prefill_pad(case, fw, target_version)
        for r, f in enumerate(fw):
            if f is not None or not serving[r]:
                continue
            if not pplx and extend and graph_rows is None:  # SUM_LEN
                out[r][t] = ("IDLE", 0, 0, False)
            elif extend:  # MAX_LEN with an extending peer: the dummy EXTEND
                out[r][t] = ("EXTEND", graph_rows or max(counts), 1, True)
            else:
                out[r][t] = ("IDLE", max(counts), max(counts), True)
    return out


def case_ranks(case) -> list[tuple]:
    """Per attention-DP rank, its requests."""
    return [tuple(q for q in case.requests if q.rank == r) for r in range(case.config.dp_size)]


def idle_failures(case, plans: list[list], obs_ranks: list, stopped: bool,
                  target_version: str = "") -> list[ServerFailure]:
    """``model_dispatch`` failures of the ranks' IDLE forwards (``stopped``: the run stopped
    early, so a predicted IDLE may be missing)."""
    if case.config.enable_encoder_swa_bounded_replay:
        return []
    layers = case.model.layers
    out = []
    for r, (want, o) in enumerate(zip(expected_idles(case, plans, target_version), obs_ranks)):
        got = {d["step"]: d for d in o.idles}
        if not got and not o.dispatch:
            continue  # the rank's forwards were not dispatched through the release's runner
        msgs = [f"step {t}: an IDLE forward where the plan has none" for t in got if t not in want]
        for t, (mode, rows, bs, pad) in sorted(want.items()):
            d = got.get(t)
            if d is None and stopped:
                continue
            what = f"step {t} IDLE"
            msgs += model_dispatch(what, d, ENTRY[mode], mode, bs, f"idle {t}" if pad else None)
            if d is not None:
                msgs += idle_stores(what, d["stores"], layers, rows)
        out += [ServerFailure("model_dispatch", None, f"rank {r}: {m}") for m in msgs]
    return out
