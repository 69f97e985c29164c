"""``swafuzz run --shard I/N``: a deterministic slice of a campaign's units, for CI matrix jobs.

N shards of ``--workers W`` plan the units of one unsharded ``--workers N*W`` run
(:func:`swafuzz.harness.pipeline.runconfig.plan_units`); shard ``I`` takes every ``N``-th unit
from the ``I``-th. A unit's Cases depend only on the unit (id, kind, seed, budget), so the shards
together run that run's units and Cases, each once; ``swafuzz merge`` joins them.
"""

from __future__ import annotations

import dataclasses

from swafuzz.harness.pipeline.runconfig import RunConfig, Unit, plan_units

FORM = "I/N with whole numbers 1 <= I <= N (e.g. --shard 2/4)"


class ShardSpecError(ValueError):
    """A ``--shard`` value that is not ``I/N``; the message names the flag and the form."""


def parse_shard(text: str) -> list[int]:
    """``"2/4"`` -> ``[2, 4]``; :class:`ShardSpecError` naming ``--shard`` otherwise."""
    parts = str(text).strip().split("/")
    try:
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError
        i, n = int(parts[0]), int(parts[1])
    except ValueError:
        raise ShardSpecError(f"--shard: {text!r} is not allowed; give {FORM}") from None
    if not 1 <= i <= n:
        raise ShardSpecError(f"--shard: {text!r} is not allowed; give {FORM}")
    return [i, n]


def label(shard) -> str | None:
    """``[2, 4]`` -> ``"2/4"`` (None for an unsharded run)."""
    return f"{shard[0]}/{shard[1]}" if shard else None


def fleet_config(cfg: RunConfig) -> RunConfig:
    """The unsharded run whose units the shards of ``cfg`` split (``cfg`` itself if unsharded)."""
    if not cfg.shard:
        return cfg
    return dataclasses.replace(cfg, shard=None, workers=cfg.workers * cfg.shard[1])


def full_plan(cfg: RunConfig) -> list[Unit]:
    """Every unit of the campaign ``cfg`` is a shard of (all shards together)."""
    return plan_units(fleet_config(cfg))


def shard_of(index: int, count: int) -> int:
    """The shard (1-based) that runs the unit at ``index`` of the full plan."""
    return index % count + 1


def shard_units(cfg: RunConfig) -> list[Unit]:
    """The units this run executes: all of them unsharded, else shard ``I`` of ``N``'s slice."""
    plan = full_plan(cfg)
    if not cfg.shard:
        return plan
    i, n = cfg.shard
    return [u for j, u in enumerate(plan) if shard_of(j, n) == i]
