"""What every check builds on: :class:`Failure`, the slot class of a divergent row or slot, forward
names in messages, and the executor names. Signatures ``(check, kind, slot class)`` deduplicate
findings; slot classes: ``dummy`` (page 0 instead of a live slot), ``live``, ``negative``,
``outside`` (past the buffer), ``dtype``, ``count``, ``stale``, ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swafuzz.checks.registry import rank

#: The executors that run graph steps as graphs (the harness knows which one ran, the target
#: does not report it).
GRAPH_EXECUTORS = ("tape", "cudagraph", "tape_recapture")
#: The capture_freeze reference: the tape, recapturing every forward on its live inputs before
#: replaying it (a reference, never checked itself).
RECAPTURE_EXECUTOR = "tape_recapture"


@dataclass
class Failure:
    check: str
    message: str
    slot_class: str = "-"
    step: int | None = None  # the step (and forward) where the divergence shows; findings of
    fwd: int | None = None  # one Case are ordered by them, earliest first
    #: an ``error`` failure: where the code under test raised, ``module.function:line``
    #: (``Observation.error["where"]``); part of the failure's :meth:`identity`
    where: str | None = None

    def signature(self, kind: str) -> str:
        return f"{self.check}/{kind}/{self.slot_class}"

    def identity(self, kind: str) -> str:
        """What "fails the same way" means while shrinking: the signature, and for an exception
        raised by the code under test also where it was raised (a bare ``AssertionError`` at
        another line is another failure)."""
        return self.signature(kind) + (f"@{self.where}" if self.where else "")

    def to_json(self) -> dict:
        d = {"check": self.check, "message": self.message, "slot_class": self.slot_class}
        if self.step is not None:
            d["step"] = self.step
        if self.fwd is not None:
            d["fwd"] = self.fwd
        if self.where is not None:
            d["where"] = self.where
        return d

    def order_key(self) -> tuple:
        """Earliest step first, then forward (a step-level failure, fwd None, after the step's
        forwards: it is observed after them), then check order (the registry's)."""
        step = self.step if self.step is not None else 1 << 30
        fwd = self.fwd if self.fwd is not None else 1 << 30
        return (step, fwd, rank(self.check))


def error_failure(obs: Any) -> Failure:
    """The ``error`` failure of an Observation whose target raised (``obs.error``): the
    exception's type (its slot class), its message (``(no message)`` for a bare ``assert``) and
    where the code under test raised it."""
    err = obs.error
    w = err.get("where")
    where = f"{w['module']}.{w['function']}:{w['line']}" if w else None
    msg = err.get("message") or "(no message)"
    return Failure("error", f"[{obs.executor}] step {err['step']}: {err['type']}"
                   + (f" raised at {where}" if where else "") + f": {msg}",
                   err["type"], err["step"], where=where)


def slot_class(expected: int | None, got: int, page_size: int,
               swa_slots: int | None = None) -> str:
    """What a wrong location ``got`` hit (``expected`` where the oracle has one)."""
    if got < 0:
        return "negative"
    if swa_slots is not None and got >= swa_slots:
        return "outside"
    if got < page_size:
        return "dummy"
    if expected is not None and expected < page_size:
        return "live-instead-of-dummy"
    return "live"


def pair_by_forward(got: list, want: list, error: dict | None) -> tuple[list, list, list]:
    """Observed forwards ``got`` paired with expected forwards ``want`` by (step, fwd): the
    (observed, expected) pairs in ``want``'s order up to the target's ``error`` step, the observed
    forwards ``want`` lacks (by key), and the expected ones the target did not run."""
    by_key = {(f.step, f.fwd): f for f in got}
    known = {(e.step, e.fwd) for e in want}
    extra = [by_key[k] for k in sorted(set(by_key) - known)]
    pairs, missing = [], []
    for e in want:
        if error is not None and e.step >= error["step"]:
            break
        o = by_key.get((e.step, e.fwd))
        if o is None:
            missing.append(e)
        else:
            pairs.append((o, e))
    return pairs, extra, missing


def fwd_name(f: Any) -> str:
    """A forward as messages name it: step, forward, ForwardMode, eager/graph and pool."""
    return f"step {f.step} fwd {f.fwd} ({f.mode}, {f.exec}, {f.pool} pool)"
