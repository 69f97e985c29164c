"""Targets: the code under test above the kernels, and the registry of engines.

Protocol and engine seams: :mod:`swafuzz.targets.protocol`. Built in: ``unified``
(:class:`~swafuzz.targets.engine.UnifiedEngine`), the bug zoo ``mutant:<name>``
(:func:`~swafuzz.targets.mutants.load_all`), ``sglang`` (imports SGLang only when requested) and
hidden ``selftest:*`` (runnable, never listed). Plugins: :mod:`swafuzz.targets.plugins`, or any
module calling :func:`register`. :func:`build_engine` is the one path from a name to an engine;
:func:`origin` says where a target came from (in every finding bundle), :func:`recipe` how a
fresh process gets it back; :func:`supports`, :func:`describe`, :func:`versions`,
:func:`version`, :func:`release` ask its hooks (the harness names no target).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from swafuzz.features import load
from swafuzz.targets import plugins
from swafuzz.targets.protocol import TargetUnavailable, UnknownTarget, supports_everything
from swafuzz.targets.registry import ORIGINS, TARGETS, register
from swafuzz.targets.sglang.target import TARGET as SGLANG_TARGET

if TYPE_CHECKING:  # pragma: no cover
    from swafuzz.scenarios.case import Case
    from swafuzz.targets.observation import Observation
    from swafuzz.targets.protocol import Subject

__all__ = ["TARGETS", "ORIGINS", "UnknownTarget", "TargetUnavailable", "register",
           "get_target", "available_targets", "origin", "recipe", "restore", "build_engine",
           "run_case", "supports", "describe", "versions", "version", "release"]

#: names that run when asked for but are not offered (``swafuzz list``, ``available_targets``)
HIDDEN_PREFIXES = ("selftest:",)

_BUILTIN_MODULES = ("swafuzz.targets.", "swafuzz.")
#: the bug zoo's loader: imports every feature's mutant modules, which register ``mutant:<name>``
ZOO_LOADER = "swafuzz.targets.mutants:load_all"
#: the built-in engines, by reference (loaded on first use: importing this package stays free
#: of torch); ``sglang`` is its factory object, which imports SGLang only when asked
BUILTIN = {"unified": "swafuzz.targets.engine:UnifiedEngine",
           "selftest:segfault": "swafuzz.targets.selftest:SegfaultEngine",
           "selftest:cuda_sticky": "swafuzz.targets.selftest:StickyCudaErrorEngine",
           "selftest:hang": "swafuzz.targets.selftest:HangEngine"}
#: the release target's name (its factory object, which imports SGLang only when asked)
SGLANG_NAME = "sglang"


def _ensure_builtin() -> None:
    if "unified" not in TARGETS:
        for name, ref in BUILTIN.items():
            TARGETS[name] = load(ref)
        TARGETS[SGLANG_NAME] = SGLANG_TARGET


def _load_zoo() -> None:
    """Register every feature's mutants (``mutant:<name>``) through the zoo's loader, reached by
    reference like the records' modules (the zoo imports :func:`register` from here)."""
    load(ZOO_LOADER)()


def get_target(name: str) -> Callable[..., Any]:
    """The factory registered as ``name`` (built-ins, bug zoo, then plugins); raises
    :class:`UnknownTarget` listing known names, :class:`TargetUnavailable` per ``check_available``."""
    f = find_target(name)
    check = getattr(f, "check_available", None)
    if callable(check):
        check()
    return f


def find_target(name: str) -> Callable[..., Any]:
    """:func:`get_target` without the availability check: the registered factory, whose hooks
    answer questions (``supports``, ``describe``) even where the target cannot run."""
    _ensure_builtin()
    if name not in TARGETS and name.startswith("mutant:"):
        _load_zoo()
    if name not in TARGETS:
        plugins.discover(name)
    if name not in TARGETS:
        raise UnknownTarget(f"--target: {name!r} is not allowed (no such target); choose one "
                            f"of: {', '.join(available_targets())} (a plugin target needs its "
                            f"package installed, --plugin MODULE or SWAFUZZ_PLUGINS)")
    return TARGETS[name]


def supports(name: str, subject: Subject) -> str | None:
    """Can target ``name`` run ``subject`` (Feature, kind name or Case) here? None: yes; else why
    (its ``supports`` hook, default: everything)."""
    hook = getattr(find_target(name), "supports", None)
    return (hook if callable(hook) else supports_everything)(subject)


def describe(name: str) -> str:
    """What ``swafuzz list --target NAME`` prints: the target's ``describe`` hook, else its
    origin, allocation mode and whether stateful episodes can drive it."""
    f = find_target(name)
    hook = getattr(f, "describe", None)
    if callable(hook):
        return hook()
    o = origin(name)
    where = "built in" if o is None else f"plugin module {o['module']}" + (
        f" ({o['dist']} {o.get('version') or ''}".rstrip() + ")" if o.get("dist") else "")
    steps = all(hasattr(f, m) for m in ("new_observation", "apply"))
    return (f"target {name}: {where}; allocation {getattr(f, 'allocation', 'exact')}; "
            f"stateful episodes: {'yes' if steps else 'no'}; what it runs: swafuzz list "
            "--features")


def versions(name: str) -> dict[str, str]:
    """Its ``versions`` hook's answer (``run.json``); {} for swafuzz's own targets and names no
    loaded target has."""
    _ensure_builtin()
    hook = getattr(TARGETS.get(name), "versions", None)
    return dict(hook()) if callable(hook) else {}


def version(name: str) -> str | None:
    """The version a known-failure ledger checks its ``releases`` against for target ``name``
    (its ``version`` hook); None: not versioned (the entries' releases do not restrict it)."""
    _ensure_builtin()
    hook = getattr(TARGETS.get(name), "version", None)
    return hook() if callable(hook) else None


def release(name: str) -> dict[str, str | None]:
    """The code under test of target ``name``: ``{"project": P, "version": V}`` from its
    ``release`` hook (a plugin wrapping ``sglang``'s answers ``sglang`` and the installed
    release); default ``{"project": name, "version": version(name)}``. A known-failure ledger's
    entry names the project in its ``target``; bundles record it under ``release``."""
    _ensure_builtin()
    if name not in TARGETS:
        plugins.discover(name)
    hook = getattr(TARGETS.get(name), "release", None)
    if callable(hook):
        got = hook()
        return {"project": str(got.get("project") or name), "version": got.get("version")}
    return {"project": name, "version": version(name)}


def available_targets() -> list[str]:
    """Every target offered to users: ``unified``, each ``mutant:<name>``, and every plugin's
    (all plugins are loaded); hidden self-test targets are left out."""
    _ensure_builtin()
    _load_zoo()
    plugins.discover(None)
    return sorted(n for n in TARGETS if not n.startswith(HIDDEN_PREFIXES))


def origin(name: str) -> dict[str, Any] | None:
    """Where target ``name`` came from: None for swafuzz's own targets, else the plugin record
    (module, distribution and version, entry point) that a bundle stores."""
    _ensure_builtin()
    if name not in TARGETS:
        get_target(name)
    if name in ORIGINS:
        return dict(ORIGINS[name])
    f = TARGETS[name]
    mod = getattr(f, "__module__", None) or ""
    if mod.startswith(_BUILTIN_MODULES):
        return None
    return plugins.describe_module(mod)


def recipe(name: str) -> dict[str, Any]:
    """How another process gets target ``name`` back: its plugin record and its factory's
    ``module``/``qualname`` (ValueError if not re-importable: ``__main__`` or local). Whether it
    can run is asked there (:func:`restore`), not here (that would import SGLang)."""
    f = find_target(name)
    mod = getattr(f, "__module__", None)
    qual = getattr(f, "__qualname__", None)
    rec = {"name": name, "module": mod, "qualname": qual, "plugin": origin(name)}
    if name in ORIGINS or (mod or "").startswith(_BUILTIN_MODULES):
        return rec  # a fresh process finds it by name (built in, or by loading its plugin)
    if mod in (None, "__main__", "__mp_main__") or not qual or "<locals>" in qual or \
            not plugins.resolves_to(mod, qual, f):
        raise ValueError(
            f"--target: target {name!r} was registered from {mod or 'an unknown module'}"
            f"{'' if not qual else ' (' + qual + ')'}, which a worker process cannot import; "
            "define its factory at the top level of an importable module and load it with "
            "--plugin MODULE (or run in-process with --no-isolate)")
    return rec


def restore(rec: dict[str, Any]) -> None:
    """Make the target described by :func:`recipe`'s ``rec`` available in this process."""
    name = rec["name"]
    if name in TARGETS:
        return
    if rec.get("plugin"):
        plugins.load_record(rec["plugin"])
    if name not in TARGETS:
        try:
            get_target(name)
            return
        except UnknownTarget:
            pass
        obj = plugins.import_object(rec["module"], rec["qualname"])
        TARGETS[name] = obj
        if rec.get("plugin"):
            ORIGINS[name] = dict(rec["plugin"])


def build_engine(name: str, case: Case, impl: str = "torch", executor: Any = None) -> Any:
    """The engine of target ``name`` for ``case`` (the one path from the registry to an
    engine; the Case driver, stateful sessions and the worker all come through here)."""
    return get_target(name)(case, impl=impl, executor=executor, name=name)


def run_case(case: Case, target: str = "unified", impl: str = "torch",
             executor: Any = None) -> Observation:
    """Run ``case`` on ``target`` under ``executor`` and return the Observation."""
    return build_engine(target, case, impl, executor).run()
