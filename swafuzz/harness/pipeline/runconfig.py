"""A campaign's resolved configuration (:class:`RunConfig`), its units of work (:class:`Unit`,
:func:`plan_units`) and ``OUT/run.json`` (:func:`write_run_meta`, :func:`read_run_config`).
The units and the run directory's layout are described in :mod:`swafuzz.harness.pipeline.driver`."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from swafuzz.harness.report.inputs import write_run_meta as write_meta

SHARD_SEED_STRIDE = 7919

@dataclass
class RunConfig:
    """Everything a run needs, resolved once (``impl`` and ``executors`` are never ``auto``)."""

    target: str = "unified"  # the first of ``targets``
    targets: list[str] = field(default_factory=list)  # every target of the run (default: target)
    impl: str = "triton"
    executors: list[str] = field(default_factory=lambda: ["eager", "tape"])
    executor_label: str = "auto"  # what the user asked for (recorded in bundles)
    kinds: list[str] = field(default_factory=list)
    examples: int = 300  # generated cases in all (split over units); with budget_s: per unit cap
    budget_s: float | None = None  # wall-clock budget of the whole run
    seed: int = 0
    workers: int = 1
    shrink_budget: int = 150
    out: str = "swafuzz-out"
    isolate: bool = True
    plugins: list[str] = field(default_factory=list)
    db: str | None = None  # hypothesis example database (see harness.pipeline.corpus when present)
    #: known-failure ledger consulted during the run (harness.ledger.known); None: off
    ledger: str | None = None
    known_cap: int = 50  # Cases of one ledger entry per unit before its region is excluded
    shard: list[int] | None = None  # [I, N]: this run is shard I of N (harness.fleet.shard)
    ray: str | None = None  # a Ray cluster's address: the units run there (harness.fleet.ray_fleet)
    coverage: str | None = None  # "on" | "bias": coverage of the target (harness.pipeline.coverage)
    #: "component" | "server": server-level Cases through the target's server pipeline
    #: (harness.pipeline.level_server); ``server_mutant``: the server mutant they run under
    level: str = "component"
    server_mutant: str | None = None

    def __post_init__(self) -> None:
        self.targets = list(self.targets) or [self.target]
        self.target = self.targets[0]

    def prefix(self, target: str) -> str:
        """What a finding's signature starts with: ``target:`` in a run of several targets
        (findings are deduplicated per target), else nothing."""
        return f"{target}:" if len(self.targets) > 1 else ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> RunConfig:
        known = {k: v for k, v in d.items() if k in RunConfig.__dataclass_fields__}
        return RunConfig(**known)


@dataclass
class Unit:
    id: str
    kind: str
    seed: int
    examples: int
    target: str = "unified"


def plan_units(cfg: RunConfig) -> list[Unit]:
    """The units of ``cfg`` (see the module docstring). ``--examples`` is split exactly: the
    units' budgets add up to it (earlier units get the remainder; a unit left with none is not
    run), so the generated cases never exceed the flag."""
    kinds, targets = cfg.kinds, cfg.targets
    pairs = [(t, k) for t in targets for k in kinds]
    shards = max(1, -(-cfg.workers // len(pairs))) if cfg.workers > len(pairs) else 1
    slots = [(t, k, s) for s in range(shards) for t, k in pairs]
    base, extra = divmod(cfg.examples, len(slots))
    prefix = (lambda t: f"{t}/") if len(targets) > 1 else (lambda t: "")
    units = [Unit(f"{prefix(t)}{k}.{s}", k, cfg.seed + SHARD_SEED_STRIDE * s,
                  base + (1 if i < extra else 0), t)
             for i, (t, k, s) in enumerate(slots)]
    return [u for u in units if u.examples > 0]


def crash_row(cfg: RunConfig, u: Unit, why: str) -> dict[str, Any]:
    """The unit row of a unit whose process (or Ray task) died outside its case worker."""
    return {"unit": u.id, "event": "unit_done", "target": u.target, "kind": u.kind,
            "seed": u.seed, "cases": 0, "generated": 0, "shrunk": 0, "replayed": 0,
            "checks": 0, "seconds": 0.0, "finding": f"{cfg.prefix(u.target)}crash/{u.kind}/unit",
            "message": why, "out_of_time": False}


def write_run_meta(cfg: RunConfig, **extra: Any) -> None:
    """``OUT/run.json``: the RunConfig (what ``--resume`` continues, under ``config``) and what
    ``swafuzz report`` reads (commit, versions, flags, and at the end timings)."""
    path = os.path.join(cfg.out, "run.json")
    old: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    meta = {**old, "command": "run", "config": cfg.to_json(),
            "target": ", ".join(cfg.targets),
            "impl": cfg.impl, "executor": cfg.executor_label, "seed": cfg.seed,
            "examples": cfg.examples if cfg.examples < 10**6 else None,
            "budget_s": cfg.budget_s, "scenarios": cfg.kinds, "db": cfg.db,
            "workers": cfg.workers, "coverage": cfg.coverage,
            "shard": f"{cfg.shard[0]}/{cfg.shard[1]}" if cfg.shard else None, **extra}
    meta.setdefault("started", time.time())
    write_meta(cfg.out, meta)


def read_run_config(out: str) -> RunConfig:
    """The RunConfig a run wrote; OSError / ValueError / TypeError when run.json cannot give
    one (the CLI: a usage error naming --resume)."""
    with open(os.path.join(out, "run.json")) as f:
        data = json.load(f)
    cfg = data.get("config") if isinstance(data, dict) else None
    if not isinstance(cfg, dict):
        raise ValueError("no 'config' object (not a run.json written by swafuzz run)")
    if not cfg.get("kinds") or not isinstance(cfg["kinds"], list):
        raise ValueError("config.kinds: not a non-empty list of scenario kinds")
    return RunConfig.from_json(cfg)

