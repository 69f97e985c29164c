"""The feature registry: every path swafuzz fuzzes, one record each (:mod:`.record`).

Each feature is a folder ``swafuzz/features/<name>/`` whose ``__init__.py`` holds its record,
``FEATURE`` (and nothing that imports engine, oracle, torch or SGLang code). The registry finds
them by walking this package, so adding a feature is adding a folder: nothing in the core lists
features. Everything that needs "all kinds", "all mutants", "all checks" or "can target T run
this" iterates the records through the functions below.

    from swafuzz import features
    features.all_features()            # tuple of Feature, in name order
    features.get("ring")               # one record (KeyError naming the known ones)
    features.feature_of_kind("ring_draft").name
    features.kind_names()              # every scenario kind, feature by feature
    features.strategy("ring")()        # the kind's SearchStrategy[Case]
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import lru_cache

from swafuzz.features.record import Feature, Kind, RecordError, Since, load

__all__ = ["Feature", "Kind", "RecordError", "Since", "all_features", "get", "feature_of_kind",
           "kind_names", "strategy", "load", "features_using", "ORDER", "HOOK_POINTS", "hook",
           "hooks"]

#: The core's extension points (``Feature.hooks`` keys) and what a hook there is. Each is asked
#: by the core module named; a record naming another point is an error.
HOOK_POINTS = {
    "oracle.shadow": "oracles.engine: (case, observed_alloc, observed_channels, window_of) -> the "
                     "Shadow that answers this Case, or None (the paged Shadow then)",
    "oracle.step_path_shadow": "oracles.engine: (case) -> the shadow of the step path "
                               "(``engine.step_path``) of a Case, or None when the Case uses "
                               "none",
    "check.expected_refusal": "harness.checks: (obs, exp) -> whether the target's error is the "
                              "refusal the contract expects (not an error finding)",
    "oracle.slot_rows": "oracles.shadow: (case, step, fwd, pool, layer, n_rows) -> the bytes "
                        "the forward's rows leave in their slots under the feature's cache "
                        "layout, or None (the payload rows themselves then)",
    "oracle.prefix_cap": "oracles.sharing: (case, admit step, n) -> the tokens of an n-token "
                         "prefix hit the Case shares after the feature's cap (applied in "
                         "feature order)",
    "oracle.graph_use": "harness.contract_checks: (case, graphs) -> (replays, captures) the "
                        "feature's graphs add to what the graph executor counts",
    "check.slot_difference": "harness.write_checks: (case, want, got) -> what a pool_bytes "
                             "finding adds about where one slot's bytes differ, or ''",
    "check.slot_owner": "harness.write_checks: (case, loc) -> whose slot a resolved write "
                        "location is under the feature's pool rules, or None (the paged "
                        "owner then)",
    "check.skipped_loc": "harness.contract_checks: (case, loc) -> whether a negative write "
                         "location is one the Case's stores skip (not a contract violation)",
    "check.invariants": "harness.invariant_checks: (case, step_obs, where, live) -> the "
                        "invariants check's failures after one step of a Case whose pool the "
                        "feature's rules judge, or None (the paged rules then)",
    "engine.uses_step_path": "targets.engine: (case) -> whether the Case runs on the step path "
                             "(``engine.step_path``; any feature answering True builds it)",
    "engine.step_path": "targets.engine: the step path class of the unified engine: it takes "
                        "over the steps it handles and observes into its own channel",
    "engine.window_graph_runner": "features.request_window.engine: the window path's DECODE-graph "
                                  "runner class (none declared: graph steps run eagerly)",
    "engine.prefill_graph_runner": "features.request_window.engine: the window path's prefill-"
                                   "graph runner class (none declared: prefills run eagerly)",
    "engine.window_verify": "features.request_window.engine: the window path's verify / "
                            "DP-padded EXTEND class",
    "engine.uses_allocator": "targets.engine: (case) -> whether the Case needs the allocator "
                             "of ``engine.allocator`` / ``sglang.allocator`` (one that keeps "
                             "the store-row tables, ``tables``) instead of the paged one",
    "engine.allocator": "targets.engine: the allocator class of a Case that "
                        "``engine.uses_allocator`` claims",
    "engine.draft_extend_loc_rows": "targets.engine: (case) -> rows of the draft-extend "
                                    "backend's SWA-location buffer (PR #34890); 0: none (the "
                                    "largest answer counts)",
    "engine.pool_impl": "targets.kv_pool: (pool config, impl) -> the implementation a pool of "
                        "the Case's cache layout stores through, or None (``impl`` itself)",
    "engine.draft_block_mixin": "targets.engine: the backend mixin of the ``draft_block`` step",
    "engine.draft_block": "targets.engine: (engine, i, step) -> forwards of a draft_block step",
    "engine.store_rows": "targets.backend: (allocator tables, loc, positions) -> int32 rows the "
                         "stores write, from the allocator's tables",
    "engine.store_skip": "targets.backend: (loc) -> the store's skip guard when rows come from "
                         "the allocator's tables",
    "sglang.step_path": "targets.sglang.engine: () -> the release's step path class",
    "sglang.server_pad": "targets.sglang.pipeline.steps: (config, mode, seq_lens, extend_lens, "
                         "out_cache_loc) -> rank 0's batch after the release's MLP-sync padding "
                         "(attention TP > 1)",
    "sglang.server_pad_mutant": "targets.sglang.pipeline.mutants: (server mutant name) -> a "
                                "context manager running the ranks' padding with its patch",
    "sglang.server_window": "targets.sglang.pipeline.steps: (pipeline) -> the request-window hop "
                            "of a server-level run with encoder replay (before_forward, forward)",
    "sglang.server_mutants": "targets.sglang.pipeline.mutants / hops: name -> (source, "
                             "'module:attr' of its patch, a context manager factory): a "
                             "feature's server mutants in the release's code",
    "sglang.server_hops": "targets.sglang.pipeline.hops: (rows, 0.5.12 column) a feature adds "
                          "to the server-level hop table",
    "sglang.server_refusal": "targets.sglang.pipeline.argnames: (config, release version) -> "
                             "why a feature's server-level hop does not run the Case on the "
                             "installed release (naming the field), or None",
    "server.window_oracle": "server.oracle: (server case) -> the request window's shadow "
                            "(release, stores, forward) of a Case with encoder replay",
    "server.ranks_judge": "server.run: (server case, observation, graphs) -> the failures of "
                          "a Case with attention-DP ranks, judged per rank",
    "sglang.server_ranks": "targets.sglang.pipeline.steps: (case, impl, executor, pipeline "
                           "class) -> the observation of a Case with attention-DP ranks (one "
                           "per rank)",
    "server.kinds": "server.strategies: the (kind, description, strategy) triples a feature "
                    "adds to the server-level kinds (opt-in)",
    "sglang.window_graph_runner": "features.request_window.sglang: the release's DECODE-graph "
                                  "runner class under a window",
    "sglang.prefill_graph_runner": "features.request_window.sglang: the release's prefill-graph "
                                   "runner class under a window",
    "sglang.prefix_path_mixin": "features.tail_graphs.sglang: the release's prefix-hit, replay "
                                "and compressor seams of the window path (0.5.23 only)",
    "sglang.window_verify": "features.request_window.sglang: the release's window verify / "
                            "DP-padded EXTEND class",
    "sglang.allocator": "targets.sglang.engine: (config, device, pool) -> the release's "
                        "allocator of a Case that ``engine.uses_allocator`` claims",
    "sglang.post_metadata_stamp": "targets.sglang.engine: (backend, metadata, batch) -> None: "
                                  "the write rows stamped after the release's in-graph metadata "
                                  "op, when rows come from the allocator's tables",
    "sglang.pool_impl": "targets.sglang.engine: (pool config, impl) -> the release's store "
                        "implementation for a pool of the Case's cache layout, or None",
    "sglang.real_pool": "targets.sglang.engine: (release pool object, pool config) -> None: "
                        "the attributes the feature's release code reads set on the pool "
                        "object (every feature, every Case)",
    "sglang.bare_backend": "targets.sglang.real: (release backend object) -> None: the "
                           "attributes the feature's release code reads set on a backend built "
                           "without its constructor",
    "sglang.draft_block_mixin": "targets.sglang.engine: the release's draft block mixin",
    "sglang.facts": "targets.sglang (TABLE, matrix.RANGES, features): the feature's facts about "
                    "the sglang target, a swafuzz.features.sglang_facts.SGLangFacts (its rows of "
                    "the real/modelled table, per-release answers, probe of the release)",
    "scenario.step_ops": "scenarios.schema: the step ops the feature owns, a tuple of "
                         "features.step_op.StepOp (what each takes, writes and grows)",
    "scenario.step_shape": "scenarios.validate: (obj, path, kw, get) -> None: raises CaseError "
                           "naming the field when a parsed step breaks the feature's shape "
                           "rules (get(name): the step's field, its default when left out)",
    "scenario.episode_rules": "scenarios.episode_machine: {rule name: function(machine[, "
                              "data])} the stateful episode machine gains as rules",
    "oracle.step_check": "oracles.shadow: (i, step) -> None: raises CaseInfeasible for a step "
                         "whose feature fields the contract cannot run",
    "oracle.step_ops": "oracles.shadow: {op: (shadow, i, step, exec) -> None}: what each op "
                       "the feature owns does on the shadow (an op without one changes "
                       "nothing the contract observes)",
    "oracle.rewrite": "oracles.paths: (step) -> the ForwardMode name the feature rewrites the "
                      "step's batch to (run eagerly: no graph runs it), or None",
    "oracle.batch_pad": "oracles.paths: (step, own rows, requests, width, whole) -> (eager "
                        "rows, batch size for the bucket, rows padded to) when the feature "
                        "pads the step's batch, or None",
    "oracle.path_ops": "oracles.paths: {op: (case, step, add) -> None}: the forwards each op "
                       "the feature owns runs, through add(fwd, mode, runner, batch, per, "
                       "n_real, eager_rows, pad_to)",
    "engine.step_ops": "targets.engine: {op: (engine, i, step) -> [ForwardObs]}: how the "
                       "unified engine runs each op the feature owns (an engine method "
                       "step_<op> overrides it)",
    "scenario.swa_buffer_pages": "scenarios.schema: (pool config) -> pages of one SWA layer "
                                 "buffer under the feature's layout (dummy page included), or "
                                 "None (swa_pages + 1 then); the first feature that answers",
    "oracle.step_path_ops": "oracles.paths: (case) -> the ops whose forwards the feature's step "
                            "path (features' engine.step_path) runs, or None; the first feature "
                            "that answers",
    "oracle.graph_admit": "oracles.shadow: (pool config) -> whether an admit may run in a "
                          "graph on that pool (any feature saying so)",
    "engine.rank_pad": "targets.engine: the class (built with the device) padding a batch to "
                       "the other ranks' rows and rewriting it to EXTEND (rank_tokens)",
}

#: Draw order of the features' kinds in the default campaign (features not named come after,
#: by name). The base paths first, so a campaign's first units are the cheapest.
ORDER = ("dense", "dp", "remap", "raw_metadata", "draft_extend_buffer", "padded_pages",
         "dsv4_layout", "verify_reject", "prefix_share", "ring", "request_window", "late_tail",
         "encoder_replay", "window_graphs", "prefill_graphs", "tail_prefix", "tail_graphs",
         "dspark", "ring_draft")


@lru_cache(maxsize=None)
def all_features() -> tuple[Feature, ...]:
    """Every feature record under this package, validated; kinds and names unique."""
    found: list[Feature] = []
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        rec = getattr(mod, "FEATURE", None)
        if not isinstance(rec, Feature):
            raise RecordError(f"swafuzz/features/{info.name}/__init__.py: no FEATURE record "
                              "(a Feature instance) defined")
        if rec.name != info.name:
            raise RecordError(f"swafuzz/features/{info.name}: FEATURE.name is {rec.name!r}; "
                              f"it must be the folder's name {info.name!r}")
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
        for k in f.kind_names():
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
    for f in all_features():
        if kind in f.kind_names():
            return f
    raise KeyError(f"no feature owns scenario kind {kind!r}; known kinds: "
                   f"{', '.join(kind_names())}")


def kind_names() -> tuple[str, ...]:
    return tuple(k for f in all_features() for k in f.kind_names())


def default_kind_names() -> tuple[str, ...]:
    """The kinds a campaign runs when none is named: every kind but the resource-gated ones
    (``Kind.ram_bytes > 0``), which run only when selected by name."""
    return tuple(k.name for f in all_features() for k in f.kinds if not k.ram_bytes)


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
