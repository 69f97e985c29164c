"""The ``refusal`` check: refused state changes leave the state as it was, a flush while idle leaves
the clean state (``features/server_ops/SEMANTICS.md``). Judged from the observation and the Case
(:func:`oracles.paths.expected_requests`), never the oracle's allocator.
"""

from __future__ import annotations

from swafuzz.checks.base import Failure
from swafuzz.checks.registry import check
from swafuzz.oracles.paths import expected_requests

_PARTS = ("mapping", "free_full_pages", "free_swa_pages", "requests", "pools")


def _first_difference(a: dict, b: dict) -> str | None:
    for part in _PARTS:
        x, y = a.get(part), b.get(part)
        if x is None or y is None or x == y:
            continue
        if part in ("mapping", "pools"):
            flat_x = x if part == "mapping" else [v for k in sorted(x) for v in x[k]]
            flat_y = y if part == "mapping" else [v for k in sorted(y) for v in y[k]]
            n = sum(1 for u, v in zip(flat_x, flat_y) if u != v)
            return f"{part} changed ({n} entries differ)"
        return f"{part} changed: before {x}, after {y}"
    return None


def _state(so) -> dict:
    return {"mapping": so.mapping, "free_full_pages": so.free_full_pages,
            "free_swa_pages": so.free_swa_pages, "pools": so.pools,
            "requests": None if so.requests is None else
            {r: (list(t), ev) for r, (t, ev) in so.requests.items()}}


@check("refusal", defence=(
    "a refused flush or admission that changes the state changes the mapping, the free pages, "
    "the request table or the pool bytes, which invariants, write_targets and pool_bytes also "
    "compare with the Case; refusal names the refused step and the part that changed, judged "
    "from the observation alone (the state before and after the step), and is the one check "
    "that requires an idle flush to leave the clean state even where nothing is allocated next"))
def check_refusal(case, obs, exp) -> list[Failure]:
    """A ``refused_admit``, and a ``flush`` while the Case has a live request, leave the state
    (mapping, free pages, request table, pool bytes) exactly as the step found it; a ``flush``
    while idle leaves every page free on both sides, ``M[:-1] = 0`` and the pool bytes as
    they were. Proven by ``flush_while_running``, ``refusal_takes_full_pages`` and
    ``flush_seeds_page_zero``."""
    pc = case.pool
    if not any(s.op in ("flush", "refused_admit") for s in case.steps):
        return []
    live = expected_requests(case)
    clean = {"mapping": [0] * (pc.mapping_len - 1) + [-1],
             "free_full_pages": list(range(1, pc.full_pages + 1)),
             "free_swa_pages": list(range(1, pc.swa_pages + 1)), "requests": {}}
    before = dict(clean)
    for so in obs.steps:
        s = case.steps[so.step]
        after = _state(so)
        was_live = bool(live[so.step - 1]) if so.step > 0 else False
        where = f"after step {so.step} ({s.op}"
        if s.op == "refused_admit" or (s.op == "flush" and was_live):
            diff = _first_difference(before, after)
            if diff:
                why = "refused: the SWA pool is short" if s.op == "refused_admit" else \
                    "refused: a request is running"
                return [Failure("refusal", f"{where}, {why}): {diff}", "state", so.step)]
        elif s.op == "flush":
            diff = _first_difference({**clean, "pools": before.get("pools")}, after)
            if diff:
                return [Failure("refusal", f"{where} while idle): not the clean state: {diff}",
                                "state", so.step)]
        before = after
    return []
