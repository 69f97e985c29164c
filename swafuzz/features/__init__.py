"""The feature registry: every path swafuzz fuzzes, one record each (:mod:`.record`).

Each feature is a folder ``swafuzz/features/<name>/`` whose ``__init__.py`` holds its record,
``FEATURE`` (importing no engine, oracle, torch or SGLang code). The registry walks this package,
so adding a feature is adding a folder; everything needing "all kinds / mutants / checks" or "can
target T run this" iterates the records through the functions below.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
from functools import lru_cache

from swafuzz.features.parts import SIDES, fills
from swafuzz.features.record import Feature, Kind, RecordError, Refusal, Since, load, place_after

__all__ = ["Feature", "Kind", "RecordError", "Refusal", "Since", "all_features", "get",
           "feature_of_kind", "refusal", "refusals",
           "kind_names", "strategy", "load", "features_using", "ORDER", "HOOK_POINTS", "hook",
           "hooks", "parts", "slot", "first"]

#: The core's extension points (``Feature.hooks`` keys) and what a hook there is. Each is asked
#: by the core module named; a record naming another point is an error.
HOOK_POINTS = {
    "engine.part": "targets.engine / backend / kv_pool: a features.parts.EnginePart (step path, "
                   "allocator, store rows, pool store, ...)",
    "sglang.part": "targets.sglang: a features.parts.SGLangPart (the release's twins of the engine "
                   "slots, the attributes its release code reads)",
    "oracle.part": "oracles.engine / shadow / paths / sharing: a features.parts.OraclePart "
                   "(shadow, slot bytes, prefix cap, batch pad, ...)",
    "check.part": "harness checks: a features.parts.CheckPart (expected refusal, slot owner, "
                  "skipped locations, invariants, slot difference)",
    "scenario.part": "scenarios.validate / schema: a features.parts.ScenarioPart (step shape "
                     "rules, SWA buffer pages)",
    "oracle.graph_use": "checks.contracts: (case, graphs) -> (replays, captures) the feature's "
                        "graphs add to the graph executor's counts",
    "sglang.server_pad": "targets.sglang.pipeline.steps: (config, mode, seq_lens, extend_lens, "
                         "out_cache_loc) -> rank 0's batch after MLP-sync padding (attn TP > 1)",
    "sglang.server_window": "targets.sglang.pipeline.steps: (pipeline) -> the request-window hop "
                            "of a server run with encoder replay (before_forward, forward)",
    "sglang.server_hops": "targets.sglang.pipeline.hops: (rows, 0.5.12 column) added to the "
                          "server-level hop table",
    "server.window_oracle": "server.oracle: (server case) -> the request window's shadow "
                            "(release, stores, forward) of a Case with encoder replay",
    "oracle.server_judge": "server.run: (server case, observation, graphs, disabled) -> the "
                           "failures of a Case the feature judges itself, or None; first answer",
    "sglang.server_ranks": "targets.sglang.pipeline.steps: (case, impl, executor, pipeline "
                           "class) -> the observation of a Case with attention-DP ranks",
    "sglang.server_tree": "targets.sglang.pipeline.steps: (case, impl, executor, pipeline "
                          "class) -> the observation of a Case with the radix (prefix) cache on",
    "sglang.server_takeover": "targets.sglang.pipeline.steps: (case, impl, executor, pipeline "
                              "class) -> the observation of a Case whose server is the decode "
                              "side of PD disaggregation",
    "sglang.facts": "targets.sglang (TABLE, matrix.RANGES, features): a "
                    "features.sglang_facts.SGLangFacts (real/modelled rows, per-release answers, "
                    "probe)",
    "scenario.step_ops": "scenarios.schema: a tuple of features.step_op.StepOp (the ops the "
                         "feature owns: what each takes, writes and grows)",
    "scenario.episode_rules": "scenarios.episode_machine: {rule name: function(machine[, "
                              "data])}, rules of the stateful episode machine",
    "oracle.step_ops": "oracles.shadow: {op: (shadow, i, step, exec) -> None} for the feature's "
                       "ops (none: the op changes nothing the contract observes)",
    "engine.step_ops": "targets.engine: {op: (engine, i, step) -> [ForwardObs]} for the "
                       "feature's ops (an engine method step_<op> overrides it)",
    "oracle.step_path_ops": "oracles.paths: (case) -> the ops the feature's step path runs, or "
                            "None; the first answer",
    "export.sglang_test": "swafuzz.export: (server case, bundle) -> the maintainer's recipe of a "
                          "finding on the feature's path (features.export_recipe.Recipe: SGLang "
                          "functions, expected vs observed, a standalone SGLang test), or None; "
                          "the first answer",
}

#: Draw order of the features' kinds in the default campaign (features not named come after,
#: by name). The base paths first, so a campaign's first units are the cheapest.
ORDER = ("dense", "spec_decode", "dp", "remap", "raw_metadata", "draft_extend_buffer", "padded_pages",
         "dsv4_layout", "verify_reject", "prefix_share", "ring", "request_window", "late_tail",
         "encoder_replay", "window_graphs", "prefill_graphs", "tail_prefix", "tail_graphs",
         "dspark", "ring_draft")


def _feature_packages():
    """The feature folders, as names under this package: each top-level folder, and the
    sub-feature folders a family keeps inside its own (``request_window.late_tail``: a path
    built on the window lives with it, so the family's modules import each other inside one
    folder)."""
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        yield info.name
        sub = os.path.join(os.path.dirname(os.path.abspath(__file__)), info.name)
        for inner in pkgutil.iter_modules([sub]):
            if inner.ispkg:
                yield f"{info.name}.{inner.name}"


@lru_cache(maxsize=None)
def all_features() -> tuple[Feature, ...]:
    """Every feature record under this package, validated; kinds and names unique."""
    found: list[Feature] = []
    for rel in _feature_packages():
        mod = importlib.import_module(f"{__name__}.{rel}")
        rec = getattr(mod, "FEATURE", None)
        folder = "swafuzz/features/" + rel.replace(".", "/")
        if not isinstance(rec, Feature):
            if "." in rel:  # a family's helper package, not a feature
                continue
            raise RecordError(f"{folder}/__init__.py: no FEATURE record (a Feature instance) "
                              "defined")
        name = rel.rsplit(".", 1)[-1]
        if rec.name != name:
            raise RecordError(f"{folder}: FEATURE.name is {rec.name!r}; it must be the "
                              f"folder's name {name!r}")
        rec = rec.rooted(f"{__name__}.{rel}")
        if rec.semantics == f"swafuzz/features/{rec.name}/SEMANTICS.md":
            rec = dataclasses.replace(rec, semantics=f"{folder}/SEMANTICS.md")
        rec.validate()
        for point in rec.hooks:
            if point not in HOOK_POINTS:
                raise RecordError(f"feature {rec.name!r}: hooks: {point!r} is not a hook point; "
                                  f"known: {', '.join(HOOK_POINTS)}")
        found.append(rec)
    rank = {n: i for i, n in enumerate(ORDER)}
    found.sort(key=lambda f: (rank.get(f.name, len(ORDER)), f.name))
    seen: dict[str, str] = {}
    for f in found:
        for k in f.kind_names(None):
            if k in seen:
                raise RecordError(f"scenario kind {k!r} is claimed by features {seen[k]!r} and "
                                  f"{f.name!r}; a kind belongs to one feature")
            seen[k] = f.name
    return tuple(found)


def get(name: str) -> Feature:
    for f in all_features():
        if f.name == name:
            return f
    raise KeyError(f"no feature {name!r}; known: {', '.join(f.name for f in all_features())}")


def feature_of_kind(kind: str) -> Feature:
    """The feature owning ``kind`` (a kind of either level)."""
    for f in all_features():
        if kind in f.kind_names(None):
            return f
    raise KeyError(f"no feature owns scenario kind {kind!r}; known kinds: "
                   f"{', '.join(kind_names())}")


def kind_names(level: str = "component") -> tuple[str, ...]:
    """Every scenario kind of ``level`` (``Kind.level``), feature by feature."""
    return tuple(k for f in all_features() for k in f.kind_names(level))


def default_kind_names(level: str = "component") -> tuple[str, ...]:
    """The kinds of ``level`` a campaign runs when none is named: every kind but the opt-in
    and the resource-gated ones (``Kind.ram_bytes > 0``), which run only when named."""
    return tuple(k.name for f in all_features() for k in f.kinds
                 if k.level == level and k.default)


def gated_kinds() -> dict[str, int]:
    """Resource-gated kind name -> the RAM (bytes) one of its Cases needs."""
    return {k.name: k.ram_bytes for f in all_features() for k in f.kinds if k.ram_bytes}


def ram_refusal(kinds, available: int | None, workers: int = 1) -> str | None:
    """Why ``kinds`` cannot run with ``available`` bytes of memory (None: unknown, not
    refused) and ``workers`` Cases at a time, or None when every gated kind among them fits."""
    if available is None:
        return None
    short = [(k, kind(k).ram_bytes) for k in kinds if kind(k).ram_bytes * workers > available]
    if not short:
        return None
    need = ", ".join(f"{k} needs {b} bytes ({b / 2**30:.1f} GiB)" for k, b in short)
    times = f" x {workers} workers" if workers > 1 else ""
    return (f"--scenario: too little memory for resource-gated kind(s): {need} of RAM per "
            f"Case{times}; {available} bytes ({available / 2**30:.1f} GiB) are available")


def kind(name: str) -> Kind:
    for k in feature_of_kind(name).kinds:
        if k.name == name:
            return k
    raise AssertionError(name)  # pragma: no cover - feature_of_kind found it


def strategy(kind_name: str):
    """The callable that builds kind ``kind_name``'s ``SearchStrategy[Case]``."""
    return load(kind(kind_name).strategy)


@lru_cache(maxsize=None)
def refusals() -> tuple:
    """Every record's :class:`Refusal` in the order they are asked: feature order, each with an
    ``after`` moved right after the refusal it names."""
    mine = [r for f in all_features() for r in f.refusals]
    return tuple(place_after(
        [r for r in mine if not r.after], [r for r in mine if r.after], lambda r: r.applies,
        lambda r: f"refusal {r.applies!r}: after {r.after!r}, which is no record's refusal"))


def refusal(level: str, config, version: str | None = None) -> str | None:
    """Why ``level`` does not run a Case with ``config``: the first record :class:`Refusal`
    of that level that applies (in :func:`refusals` order), or None. Without ``version``: the
    config refusals; with it (the installed release's), the release refusals."""
    for r in refusals():
        if r.level != level or r.release != (version is not None):
            continue
        if r.release:
            why = load(r.applies)(config, version)
            if why:
                return why
        elif load(r.applies)(config):
            return r.why
    return None


def hooks(point: str) -> list:
    """What every feature plugs into ``point`` (loaded), in feature order."""
    if point not in HOOK_POINTS:
        raise KeyError(f"no hook point {point!r}; known: {', '.join(HOOK_POINTS)}")
    return [load(f.hooks[point]) for f in all_features() if point in f.hooks]


def hook(point: str):
    """The one thing a feature plugs into ``point`` (a point that takes one)."""
    found = [f.name for f in all_features() if point in f.hooks]
    if len(found) != 1:
        raise RecordError(f"hook point {point!r} takes one feature's hook; "
                          f"{len(found)} declare it ({', '.join(found) or 'none'})")
    return hooks(point)[0]


def parts(side: str) -> list[type]:
    """Every feature's part of ``side`` (a :data:`features.parts.SIDES` key: the class its
    record names at ``"<side>.part"``), in feature order."""
    base = SIDES[side]
    found = []
    for f in all_features():
        if f"{side}.part" in f.hooks:
            part = load(f.hooks[f"{side}.part"])
            if not (isinstance(part, type) and issubclass(part, base)):
                raise RecordError(f"feature {f.name!r}: hooks[{side}.part]: {part!r} is not a "
                                  f"subclass of features.parts.{base.__name__}")
            found.append(part)
    return found


def slot(side: str, name: str, optional: bool = False):
    """Slot ``name`` of the one part of ``side`` filling it (``optional``: None when none
    does)."""
    if not hasattr(SIDES[side], name):
        raise KeyError(f"no slot {name!r} of {SIDES[side].__name__}")
    found = [p for p in parts(side) if fills(p, side, name)]
    if optional and not found:
        return None
    if len(found) != 1:
        raise RecordError(f"slot {side}.{name} takes one feature's part; {len(found)} fill it "
                          f"({', '.join(p.__qualname__ for p in found) or 'none'})")
    return getattr(found[0], name)


def first(side: str, name: str, *args):
    """The first answer other than None of the parts' slot ``name`` asked with ``args``."""
    for part in parts(side):
        got = getattr(part, name)(*args)
        if got is not None:
            return got
    return None


def features_using(case) -> tuple[Feature, ...]:
    """The features a Case (of either level) uses: the one owning its kind, plus every feature
    one of whose ``case_fields`` the Case sets away from its default (a hand-written Case has
    kind ``"custom"``, so its fields decide)."""
    used: list[Feature] = []
    for f in all_features():
        if case.kind in f.kind_names() or any(_field_set(case, cf, dataclasses)
                                              for cf in f.case_fields):
            used.append(f)
    return tuple(used)


def _field_set(case, ref: str, dataclasses) -> bool:
    where, name = ref.split(".", 1)  # a section of the other level's Case: none here
    got = case if where == "case" else getattr(
        case, {"step": "steps", "request": "requests"}.get(where, where), ())
    objs = got if isinstance(got, tuple) else [got]
    for o in objs:
        fs = {f.name: f for f in dataclasses.fields(o)}
        if name not in fs:
            continue
        f = fs[name]
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        if getattr(o, name) != default:
            return True
    return False
