"""The scheduling plan of a server-level Case: which batch runs at each scheduling step.

This is the Case's semantics (like a component Case's ``steps``), read by the target's pipeline
and by the oracle alike. It models the scheduler's choice of batch (the release's ``Scheduler``
and ``PrefillAdder`` need a server process), not what the release does with the batch:

* at step ``t`` first every request whose ``abort_step`` is ``t`` leaves (a running or
  chunked one is released; one still waiting is dropped), then every running request that has produced
  ``max_new_tokens`` tokens is released;
* then, if a prompt is being chunked or requests have arrived and wait, one EXTEND batch: the
  chunked request's next chunk first, then the waiting requests in arrival order (index order
  on ties), while ``chunked_prefill_size`` tokens remain; a prompt that does not fit is
  truncated to what remains and goes on in the next prefill (the PrefillAdder's chunking); a
  request whose whole prompt is in produces its first output token and joins the running
  ones;
* else, if requests run, one DECODE batch of every running request (admission order) writes the
  KV of each one's last output token and produces the next one;
* else the step is idle. The plan ends when every request has left.
"""

from __future__ import annotations

from dataclasses import dataclass

from swafuzz.server.case import MAX_STEPS, ServerCase

VOCAB = 32000


@dataclass(frozen=True)
class Forward:
    """One forward: ``mode`` ("EXTEND" / "DECODE"), the requests in batch order and, per
    request, the positions of the tokens whose KV it writes (``start``, ``count``)."""

    step: int
    index: int
    mode: str
    rids: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]

    @property
    def rows(self) -> int:
        return sum(n for _, n in self.spans)


@dataclass(frozen=True)
class Release:
    """Requests leaving at ``step`` (before its forward), their KV released."""

    step: int
    rids: tuple[int, ...]
    aborted: tuple[int, ...]


def prompt_ids(case: ServerCase, rid: int) -> list[int]:
    """The prompt's token ids: a prefix group's first ``prefix_len`` ids are shared."""
    r = case.requests[rid]
    out = []
    for i in range(r.prompt_len):
        if r.prefix_group is not None and i < r.prefix_len:
            out.append(1 + (r.prefix_group * 997 + i * 13) % (VOCAB - 1))
        else:
            out.append(1 + (rid * 7919 + i * 31 + 5) % (VOCAB - 1))
    return out


def output_id(rid: int, k: int) -> int:
    """The ``k``-th token request ``rid`` generates (the stub model's sampler)."""
    return 1 + (rid * 104729 + k * 17 + 3) % (VOCAB - 1)


def plan(case: ServerCase) -> list[Forward | Release]:
    """The Case's schedule (module docstring), forwards and releases in order."""
    reqs = case.requests
    chunk = case.config.chunked_prefill_size
    waiting = list(range(len(reqs)))
    running: list[int] = []
    chunked: tuple[int, int] | None = None  # (request, prompt tokens already computed)
    outputs: dict[int, int] = {}
    out: list[Forward | Release] = []
    nfwd = 0
    for t in range(MAX_STEPS + MAX_STEPS):
        if not waiting and not running and chunked is None:
            break
        held = running + ([chunked[0]] if chunked else [])
        aborted = [i for i in held + waiting if reqs[i].abort_step == t]
        waiting = [i for i in waiting if i not in aborted]
        done = [i for i in held if i in aborted or (i in running
                                                    and outputs[i] >= reqs[i].max_new_tokens)]
        if done:
            running = [i for i in running if i not in done]
            chunked = None if chunked and chunked[0] in done else chunked
            out.append(Release(t, tuple(done), tuple(i for i in done if i in aborted)))
        ready = sorted((i for i in waiting if reqs[i].arrive_step <= t),
                       key=lambda i: (reqs[i].arrive_step, i))
        if ready or chunked:
            batch, spans, budget = [], [], chunk if chunk is not None else 1 << 30
            todo = ([chunked] if chunked else []) + [(i, 0) for i in ready]
            chunked = None
            for i, k in todo:
                if budget == 0:
                    break
                n = min(reqs[i].prompt_len - k, budget)
                batch.append(i)
                spans.append((k, n))
                budget -= n
                if k + n < reqs[i].prompt_len:  # truncated: the next prefill goes on with it
                    chunked = (i, k + n)
                    break
            waiting = [i for i in waiting if i not in batch]
            for i, (k, n) in zip(batch, spans):
                if k + n == reqs[i].prompt_len:  # the prompt is in: first output token
                    running.append(i)
                    outputs[i] = 1
            out.append(Forward(t, nfwd, "EXTEND", tuple(batch), tuple(spans)))
            nfwd += 1
        elif running:
            spans = tuple((reqs[i].prompt_len + outputs[i] - 1, 1) for i in running)
            for i in running:
                outputs[i] += 1
            out.append(Forward(t, nfwd, "DECODE", tuple(running), tuple(spans)))
            nfwd += 1
    return out


def forwards(case: ServerCase) -> list[Forward]:
    return [e for e in plan(case) if isinstance(e, Forward)]
