"""Attention-DP ranks at server level (issue 18 item 2; hook ``sglang.server_dp``): a Case with
``enable_dp_attention`` runs one server-level pipeline per attention-DP rank, in this process.

Each rank is a :class:`~swafuzz.targets.sglang.pipeline.steps.Pipeline` over :func:`rank_case`
(own scheduler state, pools, tree cache, request window), leaving and scheduling by its own
timeline. When some rank forwards, every rank's batch (EXTEND, DECODE or IDLE) goes through the
release's MLP sync on the DPSync ranks (:func:`.sglang_server_pad.sync_for`), and each running
rank stores its own padded batch and mode (a DECODE relabelled EXTEND stores as that EXTEND).
Observation: one :class:`ServerObs` per rank (``ServerObs.ranks``), judged per rank
(:mod:`.server_oracle`). Driven: dp_size 2 on tp_size 2; encoder replay on the pipelines'
window hop only (the DPSync token count reads it only through rows folded from a cached prefix:
none with the radix cache disabled).
"""

from __future__ import annotations

from swafuzz.features import load
from swafuzz.features.dp.server_oracle import rank_case, ranks
from swafuzz.features.dp.sglang_server_pad import active_mutant, sync_for
from swafuzz.features.dp.sglang_sync import DPSyncError, RankInput
from swafuzz.machinery import HarnessError
from swafuzz.server.case import MAX_STEPS, ServerCase
from swafuzz.server.observation import ServerObs

#: the ranks' IDLE forwards through the release (imports SGLang: loaded when a rank idles)
IDLE = "swafuzz.features.dp.sglang_server_idle:"
#: the ranks' decode->extend conversion through the release (imports SGLang)
CONVERT = "swafuzz.features.dp.sglang_server_convert:"


def rank_input(fb) -> RankInput:
    """One rank's batch as the DPSync ranks take it (its unpadded ForwardBatch)."""
    mode = fb.forward_mode.name.lower()
    return RankInput(mode=mode, seq_lens=tuple(fb.seq_lens.tolist()),
                     extend_lens=tuple(fb.extend_seq_lens_cpu) if mode == "extend" else (),
                     out_cache_loc=tuple(fb.out_cache_loc.tolist()))


def run(case: ServerCase, impl: str, executor, pipeline_cls) -> ServerObs:
    """Every rank's pipeline in lockstep (module docstring); one observation per rank."""
    n = ranks(case)
    pipes, subs = [], [rank_case(case, r) for r in range(n)]
    obs = ServerObs()
    cur = None  # the rank whose own pipeline is running (a failure is that rank's)
    try:
        pipes = [pipeline_cls(s, impl, executor) if s.requests else None for s in subs]
        tls = [p.start() if p is not None else None for p in pipes]
        for t in range(MAX_STEPS + MAX_STEPS):
            if all(tl.done() for tl in tls if tl is not None):
                break
            work = []
            for p in pipes:
                cur = p
                if p is not None:
                    p.leave(t)
                work.append(p.batches(t) if p is not None else [])
            cur = None
            if not any(work):
                continue
            fbs = [p.forward_batch(w[0][1]) if w else None for p, w in zip(pipes, work)]
            inputs = [rank_input(fb) if fb is not None else RankInput("idle") for fb in fbs]
            idles = [_idle(p) if not w else None for p, w in zip(pipes, work)]
            res = sync_for(case.config).step(inputs, mutant=active_mutant())
            conv = [None] * n
            for r, (p, w) in enumerate(zip(pipes, work)):
                if w and inputs[r].mode == "decode" and res[r].get("ran"):  # after the gather
                    cur = p
                    fbs[r] = load(CONVERT + "decide")(p, w[0][1], res[r]) or fbs[r]
                    conv[r] = load(CONVERT + "record")(p, fbs[r] if fbs[r].forward_mode
                                                       .is_extend() else None)
                    cur = None
            for r, (p, w, fb) in enumerate(zip(pipes, work, fbs)):
                if idles[r] is not None and res[r].get("ran"):  # the rank's IDLE forward
                    cur = p
                    load(IDLE + "run_idle")(p, t, idles[r], res[r]["padded"])
                    cur = None
                if not w:
                    continue
                if not res[r].get("ran"):
                    raise DPSyncError(f"rank {r} ran no forward for its {inputs[r].mode} batch")
                cur = p
                ev, batch = w[0]
                p.obs.forwards.append(p.store(ev, fb, res[r]["padded"]))
                if conv[r] is not None and ev.index in p.obs.dispatch:
                    p.obs.dispatch[ev.index]["convert"] = conv[r]
                p.after_forward(ev, batch)
                cur = None
    except (HarnessError, MemoryError):  # the harness's process group: exit 3, not a finding
        raise
    except Exception as e:  # noqa: BLE001 - the observations record the failure
        _stopped(pipes, cur, e, obs)
    obs.ranks = [p.finish() if p is not None and getattr(p, "obs", None) is not None
                 else ServerObs(target_version=obs.target_version) for p in (pipes or [None] * n)]
    obs.target_version = next((o.target_version for o in obs.ranks if o.target_version), "")
    scoped = [f"rank {r}: {o.out_of_scope}" for r, o in enumerate(obs.ranks)
              if o.out_of_scope and not o.out_of_scope.startswith(OTHER_RANK)]
    if scoped and not any(o.error for o in obs.ranks):  # the Case is out of scope as a whole
        obs.out_of_scope = scoped[0]
    return obs


def _idle(p):
    """The rank's idle ForwardBatch where its pipeline dispatches through the release's model
    runner (:mod:`.sglang_server_idle`), else None (no pipeline; or encoder replay: its idle
    store goes through the request window's ``activate_idle``, not driven here)."""
    if p is None or p.dispatch is None or p.window is not None:
        return None
    return load(IDLE + "idle_batch")(p)


#: how a rank's observation says another rank stopped the run
OTHER_RANK = "another attention-DP rank stopped the run"


def _stopped(pipes: list, cur, e: BaseException, obs: ServerObs) -> None:
    """The run stopped on ``e``: the failing rank (``cur``; None: a step of every rank, the
    MLP sync) records it; every other rank's run stopped there, out of scope."""
    started = [p for p in pipes if p is not None and getattr(p, "obs", None) is not None]
    if not started:
        obs.error = f"{type(e).__name__}: {e}"
        return
    for p in started:
        if cur is None or p is cur:
            p.failed(e)
        else:
            p.obs.out_of_scope = f"{OTHER_RANK} ({type(e).__name__})"
