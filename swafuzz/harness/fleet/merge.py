"""``swafuzz merge DIR... --out DIR``: the shard run directories of one campaign (``swafuzz run
--shard I/N``, :mod:`swafuzz.harness.fleet.shard`) joined into the directory the unsharded run
would have left (built beside ``out``, renamed into place when complete).

* Inputs: the shards of one run (same configuration and unit plan but :data:`FREE_FIELDS`), each
  once, all N, every unit finished (``partial=True``: what is there; ``run.json`` lists
  ``missing_shards`` / ``missing_units``). One unsharded run merges to a copy of itself.
* ``cases.jsonl``: every row with ``"shard": "I/N"``, in the unsharded plan's unit order.
* ``findings/``: per file name the smallest Case among the shards (tie: lower shard), with
  ``"shard"``, ``"found_by_shards"`` and its repro command.
* ``run.json``: the unsharded configuration (``--workers``: N x W), the first shard's versions
  and commit (a difference warns), the longest shard's ``seconds``, ``forward_steps`` and
  ``stats`` summed, ``merged_from`` per shard.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

from swafuzz.harness.fleet.shard import fleet_config, full_plan, shard_units
from swafuzz.harness.fleet.shard import label as shard_label
from swafuzz.harness.ledger.known import known_summary
from swafuzz.harness.pipeline import level
from swafuzz.harness.pipeline.caselog import per_kind, read_log
from swafuzz.harness.pipeline.runconfig import RunConfig
from swafuzz.reports.bundle import atomic_write_text
from swafuzz.reports.dedup import case_size

#: config fields that may differ between the shards of one run
FREE_FIELDS = ("out", "shard", "workers", "isolate", "ledger")


class MergeError(ValueError):
    """The inputs cannot be merged (the CLI exits 2 with this message; nothing is written)."""


@dataclass
class ShardRun:
    dir: str
    meta: dict[str, Any]
    cfg: RunConfig
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return shard_label(self.cfg.shard) or "whole run"

    @property
    def label_key(self) -> tuple[int, int]:  # shard order (a tie between bundles: the lower)
        return tuple(self.cfg.shard or (1, 1))


def load_run(d: str) -> ShardRun:
    """One input directory; :class:`MergeError` naming it when it is not a run directory."""
    if not os.path.isdir(d):
        raise MergeError(f"DIR: {d!r} is not a directory (give run directories written by "
                         "'swafuzz run --shard I/N')")
    path = os.path.join(d, "run.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except OSError:
        raise MergeError(f"DIR: {d!r} is not a run directory (no readable run.json)") from None
    except ValueError as e:
        raise MergeError(f"DIR: {path} is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("command") != "run" or not isinstance(
            meta.get("config"), dict) or not meta["config"].get("kinds"):
        raise MergeError(f"DIR: {d!r} is not a run directory written by 'swafuzz run' "
                         "(run.json has no run configuration)")
    try:
        cfg = RunConfig.from_json(meta["config"])
        shard = cfg.shard
        if shard is not None and not (isinstance(shard, list) and len(shard) == 2
                                      and all(isinstance(x, int) for x in shard)
                                      and 1 <= shard[0] <= shard[1]):
            raise ValueError(f"config.shard: {shard!r} is not [I, N]")
        full_plan(cfg)
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise MergeError(f"DIR: {path}: not a usable run configuration ({e})") from None
    return ShardRun(d, meta, cfg, read_log(os.path.join(d, "cases.jsonl")))


def _same_run(runs: list[ShardRun]) -> None:
    first = runs[0]
    sharded = [r for r in runs if r.cfg.shard]
    if sharded and len(sharded) != len(runs):
        whole = next(r for r in runs if not r.cfg.shard)
        raise MergeError(f"DIR: {whole.dir!r} is a whole run, not a shard: merge joins the "
                         "shards of one run ('swafuzz run --shard I/N')")
    if not sharded and len(runs) > 1:
        raise MergeError(f"DIR: {runs[1].dir!r} and {first.dir!r} are whole runs, not shards: "
                         "merge joins the shards of one run ('swafuzz run --shard I/N')")
    ref = first.cfg.to_json()
    for r in runs[1:]:
        other = r.cfg.to_json()
        for k in sorted(set(ref) | set(other)):
            if k not in FREE_FIELDS and ref.get(k) != other.get(k):
                raise MergeError(f"DIR: {r.dir!r} is not a shard of the run of {first.dir!r}: "
                                 f"config field {k!r} differs ({other.get(k)!r} vs "
                                 f"{ref.get(k)!r})")
        if (r.cfg.ledger is None) != (first.cfg.ledger is None):
            raise MergeError(f"DIR: {r.dir!r} is not a shard of the run of {first.dir!r}: one "
                             "ran with a ledger (--ledger), the other without")
        if r.cfg.shard[1] != first.cfg.shard[1]:
            raise MergeError(f"DIR: {r.dir!r} is shard {r.label}, {first.dir!r} is shard "
                             f"{first.label}: not shards of one split")
        if full_plan(r.cfg) != full_plan(first.cfg):
            raise MergeError(f"DIR: {r.dir!r} plans other units than {first.dir!r} (--workers "
                             f"{r.cfg.workers} vs {first.cfg.workers} with {r.cfg.shard[1]} "
                             "shards): not shards of one run")


def check_shards(runs: list[ShardRun], partial: bool) -> dict[str, Any]:
    """Refuse what is not the shards of one run; return the plan and what is missing."""
    if not runs:
        raise MergeError("DIR: give at least one run directory")
    _same_run(runs)
    seen: dict[str, str] = {}
    for r in runs:
        if r.label in seen:
            raise MergeError(f"DIR: {r.dir!r} and {seen[r.label]!r} are both shard {r.label}")
        seen[r.label] = r.dir
    n = runs[0].cfg.shard[1] if runs[0].cfg.shard else 1
    missing = [f"{i}/{n}" for i in range(1, n + 1) if f"{i}/{n}" not in seen] if n > 1 else []
    unfinished: list[str] = []
    for r in runs:
        mine = {u.id for u in shard_units(r.cfg)}
        stray = sorted({x["unit"] for x in r.rows if x.get("unit") not in mine})
        if stray:
            raise MergeError(f"DIR: {r.dir!r}: its case log has units outside shard {r.label} "
                             f"({', '.join(map(str, stray[:5]))})")
        done = {x["unit"] for x in r.rows if x.get("event") == "unit_done"}
        left = sorted(mine - done)
        if left and not partial:
            raise MergeError(f"DIR: {r.dir!r} (shard {r.label}) has {len(left)} unfinished "
                             f"units ({', '.join(left[:5])}); finish it with 'swafuzz run "
                             f"--resume {r.dir}' or merge with --partial")
        unfinished += left
    if missing and not partial:
        raise MergeError(f"DIR: shards {', '.join(missing)} of {n} are missing; give every "
                         "shard's directory, or merge what there is with --partial")
    return {"plan": full_plan(runs[0].cfg), "missing_shards": missing,
            "missing_units": unfinished}


def _bundles(runs: list[ShardRun]) -> dict[str, list[tuple[ShardRun, dict[str, Any]]]]:
    out: dict[str, list[tuple[ShardRun, dict[str, Any]]]] = {}
    for r in runs:
        fdir = os.path.join(r.dir, "findings")
        names = sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            path = os.path.join(fdir, name)
            try:
                with open(path) as f:
                    b = json.load(f)
            except (OSError, ValueError) as e:
                raise MergeError(f"{path}: cannot read the bundle ({e})") from None
            if not isinstance(b, dict) or not isinstance(b.get("case"), dict) or not b.get(
                    "signature"):
                raise MergeError(f"{path}: fields 'signature' and 'case' are required (a bundle "
                                 "written by swafuzz run)")
            out.setdefault(name, []).append((r, b))
    return out


def _write_dir(stage: str, out: str, runs: list[ShardRun], info: dict[str, Any]) -> list[str]:
    """The merged run directory, in ``stage``; paths recorded in it name ``out``."""
    os.makedirs(stage)
    order = {u.id: i for i, u in enumerate(info["plan"])}
    fdir = os.path.join(out, "findings")

    def moved(x: dict[str, Any], r: ShardRun) -> dict[str, Any]:
        x = {**x, **({"shard": r.label} if r.cfg.shard else {})}
        if isinstance(x.get("known_findings"), dict):  # their bundles: the merged ones
            x["known_findings"] = {
                e: {**f, "bundle": os.path.join(fdir, os.path.basename(f["bundle"]))}
                if isinstance(f, dict) and isinstance(f.get("bundle"), str) else f
                for e, f in x["known_findings"].items()}
        return x

    rows = [(order.get(x.get("unit"), len(order)), k, moved(x, r))
            for k, (r, x) in enumerate((r, x) for r in runs for x in r.rows)]
    rows.sort(key=lambda t: (t[0], t[1]))  # plan order, each unit's rows as logged
    unit_rows = [x for _, _, x in rows if x.get("event") == "unit_done"]
    with open(os.path.join(stage, "cases.jsonl"), "w") as f:
        f.write("".join(json.dumps(x) + "\n" for _, _, x in rows))
    written = []
    size = _case_size(runs[0].cfg)
    for name, found in sorted(_bundles(runs).items()):
        run, b = min(found, key=lambda rb: (size(rb[1]["case"]), rb[0].label_key))
        b = {**b, **({"shard": run.label, "found_by_shards": [r.label for r, _ in found]}
                     if run.cfg.shard else {}),
             "command": f"swafuzz repro findings/{name}"}  # as write_bundle: from the run dir
        atomic_write_text(os.path.join(stage, "findings", name),
                          json.dumps(b, indent=1, sort_keys=True) + "\n")
        written.append(name)
    first = runs[0]
    cfg = fleet_config(first.cfg)
    cfg.out = out
    metas = [r.meta for r in runs]
    meta = {**first.meta, "config": cfg.to_json(), "workers": cfg.workers, "shard": None,
            "seconds": max((m.get("seconds") or 0.0 for m in metas), default=0.0),
            "forward_steps": sum(m.get("forward_steps") or 0 for m in metas),
            "stats": per_kind(unit_rows), "known": known_summary(unit_rows),
            "interrupted": any(m.get("interrupted") for m in metas),
            "started": min((m["started"] for m in metas if m.get("started")), default=None),
            "merged_from": [{"dir": os.path.abspath(r.dir), "shard": r.label,
                             "commit": r.meta.get("commit"), "seconds": r.meta.get("seconds"),
                             "forward_steps": r.meta.get("forward_steps"),
                             "interrupted": r.meta.get("interrupted")} for r in runs],
            "missing_shards": info["missing_shards"], "missing_units": info["missing_units"]}
    atomic_write_text(os.path.join(stage, "run.json"),
                      json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return written


def _case_size(cfg: RunConfig):
    """The order 'smallest' uses for a bundle's Case at the run's level."""
    if cfg.level == "component":
        return case_size
    lv = level.get(cfg.level)
    return lambda c: lv.size(lv.load(c))


def check_out(out: str) -> bool:
    """``--out``: new or empty (returns whether it exists); :class:`MergeError` otherwise."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise MergeError(f"--out: {out!r} exists and is not a directory")
    if os.path.isdir(out) and os.listdir(out):
        raise MergeError(f"--out: {out!r} is not empty; choose a new or empty directory")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise MergeError(f"--out: cannot create {out!r} (its parent {parent!r} is not a "
                         "writable directory)")
    return os.path.isdir(out)


def warnings_of(runs: list[ShardRun]) -> list[str]:
    """What differs between the shards without making them other runs (printed by the CLI)."""
    out = []
    for key in ("commit", "versions"):
        vals = {json.dumps(r.meta.get(key), sort_keys=True) for r in runs}
        if len(vals) > 1:
            out.append(f"the shards ran with different {key}: "
                       + "; ".join(f"{r.label}: {r.meta.get(key)}" for r in runs))
    return out


def merge(dirs: list[str], out: str, partial: bool = False, finish=None) -> dict[str, Any]:
    """Merge the run directories ``dirs`` into ``out`` (new or empty). ``finish(out)``, if
    given, runs on the complete directory (the CLI writes the reports there); if it raises, or
    anything before it does, ``out`` is left as it was (absent, or empty)."""
    existed = check_out(out)
    runs = sorted((load_run(d) for d in dirs), key=lambda r: r.label_key)
    for r in runs:
        if os.path.abspath(r.dir) == os.path.abspath(out):
            raise MergeError(f"--out: {out!r} is one of the inputs")
    info = check_shards(runs, partial)
    tmp = tempfile.mkdtemp(prefix=".swafuzz-merge-", dir=os.path.dirname(os.path.abspath(out)))
    moved = False
    try:
        stage = os.path.join(tmp, "run")
        written = _write_dir(stage, out, runs, info)
        os.replace(stage, out)  # an empty --out is replaced whole
        moved = True
        result = finish(out) if finish else None
    except BaseException:
        if moved:
            shutil.rmtree(out, ignore_errors=True)
            if existed:
                os.makedirs(out, exist_ok=True)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"runs": runs, "bundles": written, "warnings": warnings_of(runs), "result": result,
            **info}
