"""Target plugins: where external targets come from, and how a bundle names the one it needs.

Three ways in, honoured alike by ``run``, ``repro``, ``zoo``, ``list``, the case worker and the
pytest plugin:

1. **Entry points** (imported only when the name is asked for, or by ``swafuzz list``)::

       [project.entry-points."swafuzz.targets"]
       mytarget = "mypkg.swafuzz_target:MyEngine"     # a factory: registered as "mytarget"
       more = "mypkg.more_targets"                    # a module: it calls register() itself

2. **``--plugin MODULE``** (repeatable): imported; it calls :func:`swafuzz.targets.register`.
3. **``SWAFUZZ_PLUGINS``**: comma-separated modules, loaded like ``--plugin``.

A target registered while a plugin loads gets an origin ``{"module", "dist", "version"[,
"entry_point"]}``, stored in finding bundles; ``repro`` exits 2 naming a plugin it cannot load.
Case workers get the parent's plugin modules and factory locations, never its ``__main__``.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import types
from typing import Any

from swafuzz.targets.registry import TARGETS, current_origin, loading, register

__all__ = ["GROUP", "ENV", "PluginError", "current_origin", "describe_module", "load_module",
           "load_env", "load_entry_point", "discover", "load_record", "import_object",
           "resolves_to", "loaded_modules"]

GROUP = "swafuzz.targets"
ENV = "SWAFUZZ_PLUGINS"


class PluginError(ValueError):
    """A plugin could not be loaded; the message names it and what to do (a usage error)."""


_loaded_modules: list[str] = []  # --plugin / SWAFUZZ_PLUGINS modules loaded in this process
_env_done: set[str] = set()
_eps_loaded: set[str] = set()


def describe_module(module: str) -> dict[str, Any]:
    """``{"module", "dist", "version"}`` for an importable module (dist/version None when the
    module is not part of an installed distribution)."""
    top = module.split(".")[0]
    dist = version = None
    try:
        names = md.packages_distributions().get(top) or []
        if names:
            dist = names[0]
            version = md.version(dist)
    except Exception:  # noqa: BLE001 - metadata is informative only
        pass
    return {"module": module, "dist": dist, "version": version}


def load_module(module: str, *, source: str = "--plugin") -> None:
    """Import plugin ``module`` (its ``register`` calls record it as their origin)."""
    if not module or not all(p.isidentifier() for p in module.split(".")):
        raise PluginError(f"{source}: {module!r} is not a module name (expected dotted.name)")
    if module in _loaded_modules:
        return
    rec = describe_module(module)
    with loading(rec):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise PluginError(f"{source}: cannot import plugin module {module!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a broken plugin is the user's input error
            raise PluginError(f"{source}: plugin module {module!r} failed on import: "
                              f"{type(e).__name__}: {e}") from None
    _loaded_modules.append(module)


def load_env() -> None:
    """Load every module named in ``SWAFUZZ_PLUGINS`` (once per value)."""
    raw = os.environ.get(ENV, "")
    if raw in _env_done:
        return
    for m in (s.strip() for s in raw.split(",")):
        if m:
            load_module(m, source=ENV)
    _env_done.add(raw)


def _entry_points() -> list[md.EntryPoint]:
    return list(md.entry_points(group=GROUP))


def load_entry_point(ep: md.EntryPoint) -> None:
    key = f"{ep.name}={ep.value}"
    if key in _eps_loaded:
        return
    dist = getattr(ep, "dist", None)
    rec = {"module": ep.module, "dist": dist.name if dist else None,
           "version": dist.version if dist else None, "entry_point": ep.name}
    with loading(rec):
        try:
            obj = ep.load()
        except Exception as e:  # noqa: BLE001
            raise PluginError(f"entry point {ep.name!r} ({ep.value}) of group {GROUP!r} "
                              f"failed to load: {type(e).__name__}: {e}") from None
        if callable(obj) and not isinstance(obj, types.ModuleType):
            if ep.name not in TARGETS:
                register(ep.name, obj)
    _eps_loaded.add(key)


def discover(name: str | None) -> None:
    """Load ``SWAFUZZ_PLUGINS`` and the entry points that may provide target ``name`` (all of
    them when ``name`` is None)."""
    load_env()
    if name is not None and name in TARGETS:
        return
    eps = _entry_points()
    exact = [ep for ep in eps if ep.name == name]
    for ep in exact or eps:
        load_entry_point(ep)
        if name is not None and name in TARGETS:
            return


def load_record(rec: dict[str, Any], *, source: str = "bundle") -> None:
    """Load the plugin described by an origin record (from a bundle or a parent process)."""
    if rec.get("entry_point"):
        for ep in _entry_points():
            if ep.name == rec["entry_point"]:
                load_entry_point(ep)
                return
    mod = rec.get("module")
    if not mod:
        raise PluginError(f"{source}: plugin record {rec!r} names no module")
    try:
        load_module(mod, source=source)
    except PluginError:
        what = mod + (f" (distribution {rec['dist']} {rec.get('version') or ''}".rstrip()
                      + ")" if rec.get("dist") else "")
        raise PluginError(f"{source}: needs the plugin {what}, which is not importable here; "
                          f"install it, or pass --plugin {mod} with it on PYTHONPATH") from None


def import_object(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolves_to(module: str, qualname: str, obj: Any) -> bool:
    """Whether importing ``module`` and walking ``qualname`` gives back ``obj`` (so another
    process can find the same factory)."""
    try:
        return import_object(module, qualname) is obj
    except Exception:  # noqa: BLE001 - not importable or not there: it does not resolve
        return False


def loaded_modules() -> list[str]:
    """The ``--plugin``/``SWAFUZZ_PLUGINS`` modules loaded in this process, in load order."""
    return list(_loaded_modules)
