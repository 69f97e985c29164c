"""The scheduling plan of a server-level Case: which batch runs at each scheduling step.

The Case's semantics, read by the target's pipeline and the oracle alike. It models the
scheduler's choice of batch (``Scheduler`` / ``PrefillAdder`` need a server process). At step t:

* requests whose ``abort_step`` is t leave (running or chunked: released; waiting: dropped),
  then running requests with ``max_new_tokens`` produced are released;
* if a prompt is being chunked or requests wait: one EXTEND of what the adder admits (observed:
  its budget reads the release allocator's free tokens; none admitted: DECODE instead) - the
  chunked request's next chunk, then waiting requests in arrival (then index) order, while
  ``chunked_prefill_size`` tokens remain; a request starting (or restarting after a retraction)
  computes from its prefix-cache hit on (observed, ``hits``; 0 without a prefix cache); a prompt that does not fit is truncated and continues
  next prefill; a request whose whole prompt is in produces its first token and runs;
* else if requests run: one DECODE of all running requests (admission order), writing each
  one's last output token's KV; if the capacity gate refuses, the requests ``retract_decode``
  chose (observed) go back to waiting and are recomputed (prompt + generated) by a later prefill;
  with speculative decoding a DECODE is one verify writing ``speculative_num_draft_tokens``
  tokens from the last output's position, producing the next ``accept_lengths`` entry (1 after);
* else idle. The plan ends when every request has left.
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
    #: with speculative decoding, per request the tokens its verify accepts (a DECODE)
    accepts: tuple[int, ...] = ()

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


@dataclass(frozen=True)
class Retract:
    """Requests ``retract_decode`` sent back at ``step`` (observed, before its DECODE): KV freed,
    refilled later; ``kept``: those it kept (none: no DECODE that step)."""

    step: int
    rids: tuple[int, ...]
    kept: tuple[int, ...] = ()


class RetractionError(ValueError):
    """An observed retraction the plan cannot follow (not a split of the running requests)."""


class Timeline:
    """The schedule, step by step (module docstring); ``retractions``: step -> (retracted, kept
    in the new batch order), observed, taken before that step's DECODE; ``hits``: step ->
    {request: tokens its prefix-cache match covers} where non-zero, or a callable ``(step,
    request) -> tokens`` (the pipeline's match, asked each time a request is offered)."""

    def __init__(self, case: ServerCase, retractions=None, admissions=None, hits=None):
        self.case, self.reqs = case, case.requests
        self.retractions = retractions if callable(retractions) else dict(retractions or {})
        self.admissions = admissions if callable(admissions) else dict(admissions or {})
        self.hits = hits if callable(hits) else dict(hits or {})
        self.waiting = list(range(len(self.reqs)))
        self.running: list[int] = []
        self.chunked: tuple[int, int] | None = None  # (request, tokens already computed)
        self.outputs: dict[int, int] = {}
        self.verifies: dict[int, int] = {}  # request -> its speculative verifies so far
        self.nfwd = 0

    def fill(self, i: int) -> int:
        """Tokens request ``i``'s prefill computes: its prompt, and after a retraction the
        tokens it generated."""
        return self.reqs[i].prompt_len + max(0, self.outputs.get(i, 0))

    def done(self) -> bool:
        return not self.waiting and not self.running and self.chunked is None

    def step(self, t: int) -> list[Forward | Release | Retract]:
        return self.leave(t) + self.schedule(t)

    def leave(self, t: int) -> list[Release]:
        """Requests leaving at ``t``: aborts, then running requests with every token."""
        reqs = self.reqs
        held = self.running + ([self.chunked[0]] if self.chunked else [])
        aborted = [i for i in held + self.waiting if reqs[i].abort_step == t]
        self.waiting = [i for i in self.waiting if i not in aborted]
        done = [i for i in held if i in aborted or (i in self.running and
                                                    self.outputs[i] >= reqs[i].max_new_tokens)]
        if not done:
            return []
        self.running = [i for i in self.running if i not in done]
        if self.chunked and self.chunked[0] in done:
            self.chunked = None
        return [Release(t, tuple(done), tuple(i for i in done if i in aborted))]

    def schedule(self, t: int) -> list[Forward | Retract]:
        """The step's batch (a prefill first), after the observed retraction before a
        DECODE (``retractions``: a dict by step, or a callable ``(step, running) -> rids``)."""
        reqs, out = self.reqs, []
        ready = sorted((i for i in self.waiting if reqs[i].arrive_step <= t),
                       key=lambda i: (reqs[i].arrive_step, i))
        prefill = self.propose(ready, t) if ready or self.chunked else None
        if prefill:  # the adder admits the first k of them (0: it defers, the others decode)
            a = self.admissions
            k = a(t, prefill) if callable(a) else a.get(t, len(prefill[0]))
            prefill = (prefill[0][:k], prefill[1][:k]) if k else None
        if prefill:
            out.append(self._prefill(t, *prefill))
        elif self.running:
            r = self.retractions
            back, kept = r(t, tuple(self.running)) if callable(r) else r.get(t, ((), ()))
            if back:
                if sorted(kept) != sorted(i for i in self.running if i not in back):
                    raise RetractionError(f"step {t}: retracted {list(back)} of the running "
                                          f"{self.running}, kept {list(kept)}")
                self.running = list(kept)  # the release's order after its retraction
                self.waiting = sorted(self.waiting + list(back))
                out.append(Retract(t, tuple(back), tuple(kept)))
                if not self.running:  # the scheduler's update_running_batch: nothing decodes
                    return out
            n = self.case.config.speculative_num_draft_tokens or 1
            spans = tuple((self.fill(i) - 1, n) for i in self.running)
            acc = tuple(self.accept(i) for i in self.running) if n > 1 or \
                self.case.config.speculative_algorithm else ()
            for i, a in zip(self.running, acc or (1,) * len(self.running)):
                self.outputs[i] += a
            out.append(Forward(t, self.nfwd, "DECODE", tuple(self.running), spans, acc))
            self.nfwd += 1
        return out

    def accept(self, i: int) -> int:
        """Speculative decoding: the tokens request ``i``'s next verify accepts (its
        ``accept_lengths`` in order, then 1)."""
        k = self.verifies.get(i, 0)
        self.verifies[i] = k + 1
        acc = self.reqs[i].accept_lengths
        return acc[k] if k < len(acc) else 1

    def hit(self, t: int, i: int) -> int:
        """The tokens request ``i``'s prefix-cache match covers when offered at step ``t``."""
        h = self.hits
        return h(t, i) if callable(h) else h.get(t, {}).get(i, 0)

    def propose(self, ready: list[int], t: int = 0) -> tuple[list[int], list[tuple[int, int]]]:
        """The prefill the adder would build at step ``t``: requests and spans (nothing changed
        yet)."""
        chunk = self.case.config.chunked_prefill_size
        batch, spans, budget = [], [], chunk if chunk is not None else 1 << 30
        for i, k in ([self.chunked] if self.chunked else []) + [(i, self.hit(t, i))
                                                                 for i in ready]:
            if budget == 0:
                break
            n = min(self.fill(i) - k, budget)
            batch.append(i)
            spans.append((k, n))
            budget -= n
            if k + n < self.fill(i):  # truncated: the next prefill goes on with it
                break
        return batch, spans

    def _prefill(self, t: int, batch: list[int], spans: list[tuple[int, int]]) -> Forward:
        self.chunked = None
        i, (k, n) = batch[-1], spans[-1]
        if k + n < self.fill(i):
            self.chunked = (i, k + n)
        self.waiting = [i for i in self.waiting if i not in batch]
        for i, (k, n) in zip(batch, spans):
            if k + n == self.fill(i):  # the prompt is in: the next output token
                self.running.append(i)
                self.outputs[i] = self.outputs.get(i, 0) + 1
        fwd = Forward(t, self.nfwd, "EXTEND", tuple(batch), tuple(spans))
        self.nfwd += 1
        return fwd


def plan(case: ServerCase, retractions: dict | None = None,
         admissions: dict[int, int] | None = None,
         hits: dict | None = None) -> list[Forward | Release | Retract]:
    """The Case's schedule (module docstring), with the observed ``retractions``, per step where
    the adder admitted fewer than it was offered, how many it admitted (``admissions``), and
    the observed prefix-cache ``hits`` (step -> {request: tokens})."""
    tl, out = Timeline(case, retractions, admissions, hits), []
    for t in range(MAX_STEPS + MAX_STEPS):
        if tl.done():
            break
        out += tl.step(t)
    return out


def forwards(case: ServerCase) -> list[Forward]:
    return [e for e in plan(case) if isinstance(e, Forward)]
