"""The bug zoo: documented mutants of the ``unified`` target, one module per feature.

A mutant subclasses :class:`targets.engine.UnifiedEngine`, swapping ONE component class for a
subclass overriding one method (two where the bug needs a source and a missing guard).
:func:`mutant` records its :class:`MutantSpec` (kinds where the bug shows, the PR/issue or spec §
it reintroduces, checks expected to kill it), appends source and checks to the class docstring
and registers ``mutant:<name>``. Mutants live in ``swafuzz/features/<feature>/mutants.py`` of
the feature owning their (first) kind, listed in its record (``mutants=``); :func:`load_all`
imports them (name -> MutantSpec). Plugins may call :func:`mutant` too.

Server mutants (``level="server"``; ``run --level server --server-mutant NAME``, ``zoo --level
server``) patch the release's code while a server-level Case runs: the patch is a
``"module:attr"`` context-manager factory (may import SGLang), with the server kinds where the
bug shows; :func:`load_server` returns them.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from swafuzz import features
from swafuzz.targets import register

#: what a mutant's ``expected`` may name besides the records' checks: a target error (an
#: exception in the engine, reported as check ``error``)
ERROR = "error"


@dataclass(frozen=True)
class MutantSpec:
    """One registered mutant: ``engine`` class; ``kinds`` where the bug shows (the zoo fuzzes
    those); ``source`` (PR/issue or spec §); ``expected`` checks (a killing Case fails one;
    ``"error"``: a target error); ``kernel_level``: the bug reaches the kernel (addresses,
    dtypes), so the CI zoo runs it on Triton even on CPU."""

    engine: type
    kinds: tuple[str, ...]
    source: str
    expected: tuple[str, ...] = ()
    kernel_level: bool = False

    @property
    def feature(self) -> str:
        """The feature the mutant belongs to: the one owning its (first) kind."""
        return features.feature_of_kind(self.kinds[0]).name


@dataclass(frozen=True)
class ServerMutant:
    """One server mutant: ``patch`` (``"module:attr"`` context-manager factory), ``kinds``,
    ``source`` (PR/issue or spec §), ``module`` (the feature mutants module declaring it)."""

    name: str
    patch: str
    kinds: tuple[str, ...]
    source: str
    module: str

    @property
    def feature(self) -> str:
        """The feature whose record lists the declaring module."""
        return next(f.name for f in features.all_features() if self.module in f.mutants)

    def patched(self):
        """The patch, opened with ``with`` around the Case's run (imports its module)."""
        return features.load(self.patch)()


_REGISTRY: dict[str, MutantSpec] = {}
_SERVER: dict[str, ServerMutant] = {}
_loaded = False
_REF = re.compile(r"^swafuzz(\.[a-z_][a-z0-9_]*)+:[A-Za-z_][A-Za-z0-9_]*$")


class MutantError(ValueError):
    """A mutant is declared wrongly: the message names the mutant and what is allowed."""


def known_checks() -> tuple[str, ...]:
    """The check names a mutant may expect: every feature record's component-level checks, then
    ``error``."""
    return tuple(c for f in features.all_features() for c in f.checks if ":" not in c) + (ERROR,)


def mutant(name: str, kinds: tuple[str, ...], source: str, expected: tuple[str, ...] = (),
           kernel_level: bool = False, level: str = "component", patch: str = ""):
    """Class decorator: register the engine class as mutant ``name`` (``mutant:<name>``).
    Unknown ``kinds`` / ``expected`` checks raise :class:`MutantError` naming the known values.
    ``level="server"``: a server mutant named by ``patch``, registered by the call itself."""
    kinds, expected = tuple(kinds), tuple(expected)
    if level == "server":
        return _server_mutant(name, kinds, source, patch)
    if level != "component":
        raise MutantError(f"mutant {name!r}: level {level!r} (allowed: component, server)")
    if not kinds:
        raise MutantError(f"mutant {name!r}: kinds must name at least one scenario kind")
    known = features.kind_names()
    bad = [k for k in kinds if k not in known]
    if bad:
        raise MutantError(f"mutant {name!r}: unknown scenario kind(s) {', '.join(bad)}; known "
                          f"kinds: {', '.join(known)}")
    checks = known_checks()
    bad = [c for c in expected if c not in checks]
    if bad:
        raise MutantError(f"mutant {name!r}: unknown expected check(s) {', '.join(bad)}; known "
                          f"checks: {', '.join(checks)}")
    if not source:
        raise MutantError(f"mutant {name!r}: source (PR, issue or spec §) must not be empty")

    def deco(cls):
        cls.mutant_name = name
        cls.__doc__ = (f"{(cls.__doc__ or '').rstrip()}\n\nSource: {source}.\nExpected to be "
                       f"killed by: {', '.join(expected) or 'unspecified'}.").lstrip()
        _REGISTRY[name] = MutantSpec(cls, kinds, source, expected, kernel_level)
        register(f"mutant:{name}", cls)
        return cls

    return deco


def _server_mutant(name: str, kinds: tuple[str, ...], source: str, patch: str):
    if not _REF.match(patch):
        raise MutantError(f"server mutant {name!r}: patch {patch!r} is not 'module:attr'")
    if not source or not kinds:
        raise MutantError(f"server mutant {name!r}: source (PR, issue or spec §) and kinds "
                          "(server kinds where it shows) must not be empty")
    bad = [k for k in kinds if k not in features.kind_names("server")]
    if bad:
        raise MutantError(f"server mutant {name!r}: unknown server kind(s) {', '.join(bad)}; "
                          f"known: {', '.join(features.kind_names('server'))}")
    module = inspect.currentframe().f_back.f_back.f_globals.get("__name__", "")
    _SERVER[name] = ServerMutant(name, patch, kinds, source, module)
    return lambda obj: obj


def load_server() -> dict[str, ServerMutant]:
    """Every server mutant, name -> :class:`ServerMutant`, in feature order (the records'
    mutants modules imported, as :func:`load_all`)."""
    load_all()
    rank = {f.name: i for i, f in enumerate(features.all_features())}
    return {n: _SERVER[n] for n in sorted(_SERVER, key=lambda n: rank[_SERVER[n].feature])}


def load_all() -> dict[str, MutantSpec]:
    """Imports the modules the records list (``Feature.mutants``) once; returns a copy of name
    -> :class:`MutantSpec` (plugins' included), in feature then declaration order."""
    global _loaded
    if not _loaded:
        for f in features.all_features():
            for ref in f.mutants:
                features.load(ref)
        _loaded = True
    rank = {f.name: i for i, f in enumerate(features.all_features())}
    order = sorted(_REGISTRY, key=lambda n: rank[_REGISTRY[n].feature])  # stable: module order
    return {n: _REGISTRY[n] for n in order}


def get(name: str) -> MutantSpec:
    """One mutant by name (every feature's mutants loaded); KeyError naming the known ones."""
    zoo = load_all()
    if name not in zoo:
        raise KeyError(f"no mutant {name!r}; known: {', '.join(zoo)}")
    return zoo[name]


__all__ = ["ERROR", "MutantError", "MutantSpec", "ServerMutant", "get", "known_checks",
           "load_all", "load_server", "mutant"]
