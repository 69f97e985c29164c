"""Attention-DP ranks at server level: what the oracle predicts (hook ``oracle.server_judge``; plain
Python over the plan, never the code it judges).

A Case with ``enable_dp_attention`` is ``dp_size`` one-rank servers (:func:`rank_case`: the
requests of that ``rank``, in order), each judged by :func:`swafuzz.server.oracle.judge` on its
own observation with the MLP sync's padding (spec §5.4, ``features/dp/SEMANTICS.md``). Per step
where some rank forwards, over the ranks' token counts (EXTEND rows, DECODE requests, 0 idle):

* MAX_LEN when no rank extends, or always under pplx (``moe_a2a_backend pplx``): every running
  rank pads to the largest count (dummy slot 0, position 0); a DECODE's batch grows with its rows
  (added requests at the fill length), and when some rank extends a DECODE runs as a
  one-token-per-request EXTEND (batch size its own);
* SUM_LEN otherwise: no padding, modes unchanged.

Attention TP per DP rank is ``tp_size / dp_size`` = 1: no attention-TP alignment.
"""

from __future__ import annotations

import dataclasses

from swafuzz.features.dp.server_convert_oracle import (
    dp_convert,
    expected_conversions,
    prefill_pad,
)
from swafuzz.features.dp.server_idle_oracle import idle_failures
from swafuzz.server.case import ServerCase
from swafuzz.server.oracle import ServerFailure, judge, observed_plan
from swafuzz.server.timeline import Forward, RetractionError


def rank_case(case: ServerCase, rank: int) -> ServerCase:
    """The Case one attention-DP rank serves: its requests (``Request.rank``), each with rank 0
    (the rank's own pipeline is a one-rank server)."""
    reqs = tuple(dataclasses.replace(r, rank=0) for r in case.requests if r.rank == rank)
    return dataclasses.replace(case, requests=reqs)


def ranks(case: ServerCase) -> int:
    return case.config.dp_size if case.config.enable_dp_attention else 1


def expected_pads(case: ServerCase, plans: list[list[Forward]],
                  target_version: str = "") -> list[dict[int, tuple]]:
    """Per rank, forward index -> ``(mode, rows, batch size)`` after the MLP sync (module
    docstring; with a prefill graph :mod:`.server_convert_oracle`'s vote and padding);
    ``plans``: each rank's forwards; ``target_version``: the release's (its padding rule)."""
    by_step = [{f.step: f for f in p} for p in plans]
    pplx = case.config.moe_a2a_backend == "pplx"
    out: list[dict[int, tuple]] = [{} for _ in plans]
    for t in sorted({t for s in by_step for t in s}):
        fw = [s.get(t) for s in by_step]
        counts = [0 if f is None else f.rows if f.mode == "EXTEND" else len(f.rids) for f in fw]
        extend = any(f is not None and f.mode == "EXTEND" for f in fw)
        graph_rows = prefill_pad(case, fw, target_version)
        max_len = pplx or not extend or graph_rows is not None
        for r, f in enumerate(fw):
            if f is None:
                continue
            rows = (graph_rows or max(counts)) if max_len else counts[r]
            if f.mode == "DECODE" and not (extend and max_len):
                out[r][f.index] = ("DECODE", rows, rows)
            else:  # an EXTEND, or a DECODE relabelled a one-token-per-request EXTEND
                out[r][f.index] = ("EXTEND", rows, len(f.rids))
    return out


def server_judge(case: ServerCase, obs, graphs: bool, disabled) -> list[ServerFailure] | None:
    """The failures of a Case with attention-DP ranks (``obs.ranks``), or None for another."""
    return judge_ranks(case, obs, graphs, disabled) if obs.ranks else None


def judge_ranks(case: ServerCase, obs, graphs: bool = False,
                disabled=frozenset()) -> list[ServerFailure]:
    """Every rank's failures (``obs.ranks``), each message naming its rank (``disabled``: the
    server checks not run)."""
    out = _ranks(case, obs, graphs, disabled)
    return out if isinstance(out, list) else [f for f in [out] if f.check not in disabled]


def _ranks(case: ServerCase, obs, graphs: bool, disabled):
    if obs.error is not None:  # no rank's pipeline started
        return ServerFailure("contracts", None, f"the pipeline raised: {obs.error}")
    subs = [rank_case(case, r) for r in range(ranks(case))]
    if len(obs.ranks) != len(subs):
        return ServerFailure("contracts", None, f"{len(obs.ranks)} rank observations for "
                             f"{len(subs)} attention-DP ranks")
    plans = []
    for sub, o in zip(subs, obs.ranks):
        try:
            plans.append([e for e in observed_plan(sub, o) if isinstance(e, Forward)]
                         if sub.requests else [])
        except RetractionError as e:
            return ServerFailure("retraction", None, str(e))
    version = next((o.target_version for o in obs.ranks if o.target_version), "")
    pads = expected_pads(case, plans, version)
    out = []
    for r, (sub, o) in enumerate(zip(subs, obs.ranks)):
        if not sub.requests:
            continue
        out += [dataclasses.replace(f, message=f"rank {r}: {f.message}")
                for f in judge(sub, o, graphs, pads=pads[r], disabled=disabled)]
    if "model_dispatch" not in disabled:  # the ranks' IDLE forwards (:mod:`.server_idle_oracle`)
        stopped = any(o.error or o.out_of_scope for o in obs.ranks)
        out += idle_failures(case, plans, obs.ranks, stopped, version)
    if "dp_convert" not in disabled:
        out += _conversions(case, plans, obs.ranks)
    return out


def _conversions(case: ServerCase, plans: list, obs_ranks: list) -> list[ServerFailure]:
    """``dp_convert`` failures: every DECODE a rank dispatched through the release's model
    runner, against :func:`.server_convert_oracle.expected_conversions`."""
    out = []
    for r, (want, plan, o) in enumerate(zip(expected_conversions(case, plans), plans, obs_ranks)):
        recs = {f.index: f for f in o.forwards}
        for f in plan:
            if f.index not in want or f.index not in o.dispatch or f.index not in recs:
                continue  # not dispatched (no record), or the run stopped before it
            lens = [start + n for start, n in f.spans]
            msgs = dp_convert(f"forward {f.index} (DECODE)", o.dispatch[f.index].get("convert"),
                              want[f.index], lens, recs[f.index].alloc)
            out += [ServerFailure("dp_convert", f.index, f"rank {r}: {m}") for m in msgs]
    return out
