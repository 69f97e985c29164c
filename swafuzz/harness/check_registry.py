"""The check registry: ``@check`` declares a check where it is defined; the feature records say
which modules hold them.

A check is a pure function over what a target did (an Observation) and what the Case determines
(the oracle's Expectation, or the Case itself). Two shapes:

* per observation (``across=False``): ``fn(case, obs, exp) -> list[Failure]``, run once for
  every observation of a Case (eager, tape, cudagraph);
* across observations (``across=True``): ``fn(case, observations) -> list[Failure] | None``,
  run once per Case over all of them (the recapture reference included: the check picks what
  it compares); ``None`` means there is nothing to judge (one observation, no reference) and the
  check does not count as run.

``level``: the level whose Cases the check judges (``"component"``, the default: the two shapes
above; ``"server"``: a check of the server-level oracle, :mod:`swafuzz.server.oracle`, whose
judge calls it at its point of the plan's walk and skips it when disabled by name). A record
names a server check ``"server:<name>"`` (the same name may be a check at both levels).

``defence`` is the defence-in-depth reason: no mutant is killed by this check alone, by
construction, and the zoo gate accepts that for exactly these checks, printing the reason. Every
other check must be the only check that kills at least one mutant (``swafuzz zoo`` ablation).

The registry is built by importing the modules the feature records list in ``check_modules``
(:mod:`swafuzz.features`): checks are ordered feature by feature (the registry's order), then
module by module as the record lists them, then in definition order. A record's ``checks`` must
name exactly the checks its modules define, and a check belongs to one feature.

    from swafuzz.harness.check_registry import all_checks, check_names, defence_in_depth
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from swafuzz import features
from swafuzz.features import RecordError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Check:
    """One registered check: its ``name`` (the ``Failure.check`` it reports), the function, the
    defence-in-depth reason (None: it must be the sole killer of a mutant), whether it runs
    across observations, and the module defining it."""

    name: str
    fn: Callable
    defence: str | None
    across: bool
    module: str
    level: str = "component"

    @property
    def ref(self) -> str:
        """The name a record lists: ``name`` at component level, ``level:name`` otherwise."""
        return self.name if self.level == "component" else f"{self.level}:{self.name}"


_DEFINED: list[Check] = []


LEVELS = ("component", "server")


def check(name: str, defence: str | None = None, across: bool = False,
          level: str = "component") -> Callable:
    """Register the decorated function as check ``name`` (see the module docstring); the
    function is returned unchanged."""
    if not _NAME.match(name):
        raise ValueError(f"check name {name!r} is not a lower-case identifier")
    if defence is not None and (not isinstance(defence, str) or not defence.strip()):
        raise ValueError(f"check {name!r}: the defence-in-depth reason must be a non-empty "
                         "string (or None)")

    if level not in LEVELS:
        raise ValueError(f"check {name!r}: level {level!r} (allowed: {', '.join(LEVELS)})")

    def register(fn: Callable) -> Callable:
        entry = Check(name, fn, defence, across, fn.__module__, level)
        for i, c in enumerate(_DEFINED):
            if (c.module, c.ref) == (entry.module, entry.ref):  # the module was imported again
                _DEFINED[i] = entry
                return fn
        _DEFINED.append(entry)
        return fn

    return register


def registered() -> tuple[Check, ...]:
    """Every check defined so far in an imported module, whether a feature lists it or not."""
    return tuple(_DEFINED)


def all_checks(level: str = "component") -> tuple[Check, ...]:
    """The checks of ``level`` of every feature, in registry order (see :func:`every_check`)."""
    return tuple(c for c in every_check() if c.level == level)


@lru_cache(maxsize=None)
def every_check() -> tuple[Check, ...]:
    """The checks of every feature at every level, in registry order; raises
    :class:`RecordError` naming the feature when a record's ``checks`` differ from what its
    ``check_modules`` define, or when two features claim one check."""
    out: list[Check] = []
    owner: dict[str, str] = {}
    for feat in features.all_features():
        mine: list[Check] = []
        for mod in feat.check_modules:
            importlib.import_module(mod)
            mine += [c for c in _DEFINED if c.module == mod]
        names = tuple(c.ref for c in mine)
        if names != feat.checks:
            raise RecordError(f"feature {feat.name!r}: checks: the record declares "
                              f"{feat.checks}, its check_modules {feat.check_modules} define "
                              f"{names}")
        for c in mine:
            if c.ref in owner:
                raise RecordError(f"check {c.ref!r} is claimed by features {owner[c.ref]!r} "
                                  f"and {feat.name!r}; a check belongs to one feature")
            owner[c.ref] = feat.name
        out += mine
    return tuple(out)


def check_names(level: str = "component") -> tuple[str, ...]:
    """Every check's name at ``level``, in registry order."""
    return tuple(c.name for c in all_checks(level))


def defence_in_depth(level: str = "component") -> dict[str, str]:
    """Check name -> defence-in-depth reason, for the checks of ``level`` that have one
    (registry order)."""
    return {c.name: c.defence for c in all_checks(level) if c.defence}


def server_check(name: str, disabled: frozenset[str] = frozenset()) -> Callable | None:
    """The function of server check ``name``, or None when ``disabled`` names it (the judge
    then skips it: leave-one-out)."""
    if name in disabled:
        return None
    for c in all_checks("server"):
        if c.name == name:
            return c.fn
    raise KeyError(f"server check {name!r} is not registered (known: "
                   f"{', '.join(check_names('server'))})")


def rank(name: str) -> int:
    """``name``'s position in registry order (after every check when it is none: ``error``,
    ``crash``, ``timeout``)."""
    names = check_names()
    return names.index(name) if name in names else len(names)
