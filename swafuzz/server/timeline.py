"""The scheduling plan of a server-level Case: which batch runs at each scheduling step.

This is the Case's semantics (like a component Case's ``steps``), read by the target's pipeline
and by the oracle alike. It models the scheduler's choice of batch (the release's ``Scheduler``
and ``PrefillAdder`` need a server process), not what the release does with the batch:

* at step ``t`` first every request whose ``abort_step`` is ``t`` leaves (a running one is
  released; one still waiting is dropped), then every running request that has produced
  ``max_new_tokens`` tokens is released;
* then, if requests have arrived and wait, one EXTEND batch admits them in arrival order (index
  order on ties) while their prompts fit ``chunked_prefill_size`` (at least one); the prefill
  produces each one's first output token;
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
    waiting = [i for i in range(len(reqs))]
    running: list[int] = []
    outputs: dict[int, int] = {}
    out: list[Forward | Release] = []
    nfwd = 0
    for t in range(MAX_STEPS + MAX_STEPS):
        if not waiting and not running:
            break
        aborted = [i for i in running + waiting if reqs[i].abort_step == t]
        waiting = [i for i in waiting if i not in aborted]
        done = [i for i in running if i in aborted or outputs[i] >= reqs[i].max_new_tokens]
        if done:
            running = [i for i in running if i not in done]
            out.append(Release(t, tuple(done), tuple(i for i in done if i in aborted)))
        ready = sorted((i for i in waiting if reqs[i].arrive_step <= t),
                       key=lambda i: (reqs[i].arrive_step, i))
        if ready:
            batch, used = [], 0
            for i in ready:
                if batch and chunk is not None and used + reqs[i].prompt_len > chunk:
                    break
                batch.append(i)
                used += reqs[i].prompt_len
            waiting = [i for i in waiting if i not in batch]
            running += batch
            for i in batch:
                outputs[i] = 1
            out.append(Forward(t, nfwd, "EXTEND", tuple(batch),
                               tuple((0, reqs[i].prompt_len) for i in batch)))
            nfwd += 1
        elif running:
            spans = tuple((reqs[i].prompt_len + outputs[i] - 1, 1) for i in running)
            for i in running:
                outputs[i] += 1
            out.append(Forward(t, nfwd, "DECODE", tuple(running), spans))
            nfwd += 1
    return out


def forwards(case: ServerCase) -> list[Forward]:
    return [e for e in plan(case) if isinstance(e, Forward)]
