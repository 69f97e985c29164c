"""What the window family's checks share: the window expectation an observation is judged against
(:func:`lane`), the pairing of window-path forwards (:func:`window_pairs`), the refusal the
window oracle predicts (A7), a forward's name in messages and a problem's failure."""

from __future__ import annotations

from swafuzz.checks.base import GRAPH_EXECUTORS, Failure, pair_by_forward
from swafuzz.features.parts import CheckPart
from swafuzz.features.request_window.channel import expected, observed


def fwd_label(f) -> str:
    """A window-path forward as messages name it."""
    return f"step {f.step} fwd {f.fwd} ({f.mode}, window path)"


def expected_refusal(obs, exp) -> bool:
    """The target's error is the refusal the window oracle predicts (A7: layout > workspace)."""
    w = expected(exp)
    return (w is not None and w.refused is not None and obs.error is not None
            and obs.error.get("step") == w.refused[0] and obs.error.get("type") == "RuntimeError")


def lane(obs, exp):
    """The window expectation for this observation's executor: Cases with DECODE-graph window
    steps have an eager lane (``WindowExp.eager``) for executors that capture no graphs (the
    harness knows the executor; the target does not report it)."""
    w = expected(exp)
    if w is not None and w.eager is not None and obs.executor not in GRAPH_EXECUTORS:
        return w.eager
    return w


def window_pairs(obs, exp, check: str):
    """The (observed, expected) window-path forward pairs of this observation's lane up to the
    target's error, and a ``check`` failure (slot class ``count``) for each forward only one
    side has."""
    w = lane(obs, exp)
    pairs, extra, missing = pair_by_forward(observed(obs).forwards, w.forwards, obs.error)
    fails = [Failure(check, f"{fwd_label(f)}: a window-path forward the Case does not "
                     "determine", "count", f.step, f.fwd) for f in extra]
    fails += [Failure(check, f"step {e.step} fwd {e.fwd}: the target ran no such window-path "
                      f"forward ({e.mode})", "count", e.step, e.fwd) for e in missing]
    return pairs, fails


def first_row_diff(a: bytes, b: bytes, rb: int) -> tuple[int, int]:
    """The first differing row of two row buffers (-1: none) and how many rows differ."""
    n = min(len(a), len(b)) // rb
    bad = [r for r in range(n) if a[r * rb:(r + 1) * rb] != b[r * rb:(r + 1) * rb]]
    return (bad[0] if bad else -1), len(bad)


def failed(fails: list, check: str, where: str, problem, step: int, fwd=None) -> bool:
    """Append ``problem`` (``(message, slot class)``, or None) to ``fails`` as a ``check``
    failure at ``where``; whether there was one."""
    if problem:
        fails.append(Failure(check, f"{where}: {problem[0]}", problem[1], step, fwd))
    return bool(problem)


class RequestWindowChecks(CheckPart):
    """The checks' part: the window's refusal the contract expects."""

    expected_refusal = staticmethod(expected_refusal)
