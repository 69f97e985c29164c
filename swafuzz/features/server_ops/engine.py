"""The server's own state changes on an engine (hook ``engine.step_ops``): ``flush`` asks the
allocator's ``flush`` (the ``sglang`` target's runs the release's), ``refused_admit`` an
admission through the allocator, which must refuse it (``features/server_ops/SEMANTICS.md``).
Neither runs a forward; what changed (nothing, on a refusal) is in the step's state."""

from __future__ import annotations

from swafuzz.targets.allocator import AllocationError


def step_flush(eng, i: int, s) -> list:
    """The flush: the allocator clears itself unless a request is live."""
    eng.allocator.flush()
    return []


def step_refused_admit(eng, i: int, s) -> list:
    """The admission the allocator's capacity check refuses (an ``AllocationError`` raised
    before anything is taken); an allocator that admits it leaves the request live, which the
    checks see."""
    try:
        eng.allocator.admit(s.rid, s.length)
    except AllocationError:
        pass
    return []


STEP_OPS = {"flush": step_flush, "refused_admit": step_refused_admit}
