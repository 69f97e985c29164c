"""The observed side of a failing Case, as compact plain data for the bundle and the HTML report.

Per executor's Observation, pool (``target``/``draft``) and layer, over the whole Case:
``written`` (SWA slots the store was handed, padding, negative and out-of-range included),
``changed`` (slots whose bytes changed in some step; the first against the poison fill),
``differs`` (slots outside the dummy page differing from the shadow pool after some step),
``redzones`` (most canary bytes overwritten before / after the buffer in a step). Slot lists are
sorted and capped at :data:`CAP` (``truncated``). Built only for failing verdicts.
"""

from __future__ import annotations

from typing import Any

from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.scenarios.paged import PagedBytes, poison_like, slot_diffs

CAP = 4096


def _slot_set(a, b, rb: int) -> set[int]:
    return set(slot_diffs(a, b, rb, 0))  # bytes, or sparse layers (scenarios.paged)


def summarize(case, obs, exp) -> dict[str, Any]:
    """``obs`` x ``exp`` (oracle Expectation) -> the plain-data summary described above."""
    p, rb = case.pool.page_size, case.pool.row_bytes
    n_layers = {"target": case.pool.layers, "draft": case.pool.draft_layers}
    written = {k: [set() for _ in range(n)] for k, n in n_layers.items()}
    changed = {k: [set() for _ in range(n)] for k, n in n_layers.items()}
    differs = {k: [set() for _ in range(n)] for k, n in n_layers.items()}
    redz = {k: [{"before": 0, "after": 0} for _ in range(n)] for k, n in n_layers.items()}
    for f in obs.forwards:
        for s in f.stores:
            if f.pool in written and 0 <= s.layer < len(written[f.pool]):
                written[f.pool][s.layer].update(int(v) for v in s.locs)
    prev: dict[str, list[bytes]] = {}
    exp_steps = {se.step: se for se in exp.steps}
    for so in obs.steps:
        se = exp_steps.get(so.step)
        for pool, layers in so.pools.items():
            if pool not in changed:
                continue
            for layer, now in enumerate(layers[: n_layers[pool]]):
                before = prev.get(pool, [None] * len(layers))[layer]
                if before is None:
                    before = poison_like(now, POISON_BYTE)
                changed[pool][layer] |= _slot_set(before, now, rb)
                if se is not None and se.pools.get(pool):
                    want = se.pools[pool][layer]
                    want = want if isinstance(want, PagedBytes) else bytes(want)
                    differs[pool][layer] |= {s for s in _slot_set(now, want, rb) if s >= p}
        prev = {k: list(v) for k, v in so.pools.items()}
        for pool, zones in so.redzones.items():
            if pool not in redz:
                continue
            for layer, z in enumerate(zones[: n_layers[pool]]):
                for side, got in (("before", z.before), ("after", z.after)):
                    want = (z.canary * (len(got) // max(1, len(z.canary)) + 1))[: len(got)]
                    nbad = sum(1 for a, b in zip(got, want) if a != b)
                    redz[pool][layer][side] = max(redz[pool][layer][side], nbad)
    truncated = False

    def lst(s: set[int]) -> list[int]:
        nonlocal truncated
        out = sorted(s)
        if len(out) > CAP:
            truncated = True
            out = out[:CAP]
        return out

    pools = {}
    for pool in n_layers:
        pools[pool] = [{"written": lst(written[pool][i]), "changed": lst(changed[pool][i]),
                        "differs": lst(differs[pool][i]), "redzones": redz[pool][i]}
                       for i in range(n_layers[pool])]
    return {"target": obs.target, "impl": obs.impl, "executor": obs.executor,
            "error": obs.error, "steps_observed": len(obs.steps), "pools": pools,
            "truncated": truncated}


def summarize_all(case, observations: list, exp) -> list[dict[str, Any]]:
    return [summarize(case, o, exp) for o in observations]
