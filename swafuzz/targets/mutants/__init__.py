"""The bug zoo: documented mutants of the ``unified`` target, one module per feature.

A mutant is a subclass of :class:`targets.engine.UnifiedEngine` that swaps ONE component class
for a subclass overriding one method (two where the bug needs a source and a missing guard), so
the engine code is never copied. It is declared with :func:`mutant`, which records a
:class:`MutantSpec` (the scenario kinds where the bug shows, the upstream PR/issue or spec § it
reintroduces, the checks expected to kill it) and registers the target ``mutant:<name>``. The
class docstring says the bug; :func:`mutant` appends the source and the expected checks to it.

Where the mutants live: the module of the feature owning their kinds
(``swafuzz/features/<feature>/mutants.py``; a mutant whose kinds span features lives with the
feature of its first kind), and that feature's record lists the module in ``mutants=``. Nothing
here names a module: :func:`load_all` imports what the records list, so a feature's mutants join
the zoo by being in its record. Plugins (:mod:`targets.plugins`) may call :func:`mutant` too.

    from swafuzz.targets.mutants import load_all
    zoo = load_all()                  # name -> MutantSpec, every feature's mutants
    zoo["ring_no_mod"].feature        # "ring"
"""

from __future__ import annotations

from dataclasses import dataclass

from swafuzz import features
from swafuzz.targets import register

#: what a mutant's ``expected`` may name besides the records' checks: a target error (an
#: exception in the engine, reported as check ``error``)
ERROR = "error"


@dataclass(frozen=True)
class MutantSpec:
    """One registered mutant.

    ``engine``: the mutant's engine class; ``kinds``: scenario kinds where the bug shows (the
    zoo fuzzes those); ``source``: the upstream PR/issue or spec § it reintroduces;
    ``expected``: the checks expected to kill it (a killing Case fails at least one of them;
    ``"error"``: a target error); ``kernel_level``: the bug is in what reaches the kernel
    (address arithmetic, dtypes), so the CI zoo runs it on Triton even on CPU."""

    engine: type
    kinds: tuple[str, ...]
    source: str
    expected: tuple[str, ...] = ()
    kernel_level: bool = False

    @property
    def feature(self) -> str:
        """The feature the mutant belongs to: the one owning its (first) kind."""
        return features.feature_of_kind(self.kinds[0]).name


_REGISTRY: dict[str, MutantSpec] = {}
_loaded = False


class MutantError(ValueError):
    """A mutant is declared wrongly: the message names the mutant and what is allowed."""


def known_checks() -> tuple[str, ...]:
    """The check names a mutant may expect: every feature record's checks, then ``error``."""
    return tuple(c for f in features.all_features() for c in f.checks) + (ERROR,)


def mutant(name: str, kinds: tuple[str, ...], source: str, expected: tuple[str, ...] = (),
           kernel_level: bool = False):
    """Class decorator: register the engine class as mutant ``name`` (target ``mutant:<name>``).

    ``kinds`` are checked against the feature registry and ``expected`` against the records'
    checks: an unknown one raises :class:`MutantError` naming the mutant and the known values."""
    kinds, expected = tuple(kinds), tuple(expected)
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


def load_all() -> dict[str, MutantSpec]:
    """Every mutant: imports the modules the feature records list (``Feature.mutants``), once,
    and returns name -> :class:`MutantSpec` (the records' mutants and any a plugin
    registered), in feature order and, within a feature, in the order they were
    declared. The dict is a copy: registering goes through :func:`mutant`."""
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


__all__ = ["ERROR", "MutantError", "MutantSpec", "get", "known_checks", "load_all", "mutant"]
