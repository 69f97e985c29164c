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

import importlib
import pkgutil
from functools import lru_cache

from swafuzz.features.record import Feature, Kind, RecordError, Since, load

__all__ = ["Feature", "Kind", "RecordError", "Since", "all_features", "get", "feature_of_kind",
           "kind_names", "strategy", "load", "features_using", "ORDER"]

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


def kind(name: str) -> Kind:
    for k in feature_of_kind(name).kinds:
        if k.name == name:
            return k
    raise AssertionError(name)  # pragma: no cover - feature_of_kind found it


def strategy(kind_name: str):
    """The callable that builds kind ``kind_name``'s ``SearchStrategy[Case]``."""
    return load(kind(kind_name).strategy)


def features_using(case) -> tuple[Feature, ...]:
    """The features a Case uses: the one owning its kind, plus every feature one of whose
    ``case_fields`` the Case sets away from its default (a hand-written Case has kind
    ``"custom"``, so its fields decide)."""
    import dataclasses

    used: list[Feature] = []
    for f in all_features():
        if case.kind in f.kind_names() or any(_field_set(case, cf, dataclasses)
                                              for cf in f.case_fields):
            used.append(f)
    return tuple(used)


def _field_set(case, ref: str, dataclasses) -> bool:
    where, name = ref.split(".", 1)
    if where == "pool":
        objs = [case.pool]
    elif where == "graph":
        objs = [case.graph]
    elif where == "case":
        objs = [case]
    else:
        objs = list(case.steps)
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
