"""The check registry: ``@check`` (:func:`swafuzz.features.record.check`, beside the records so the
server level's plain-Python oracle declares checks without the harness) marks a check where it is
defined; the feature records' ``check_modules`` say which modules hold them.

A check is a pure function over what a target did (an Observation) and what the Case determines:

* ``across=False``: ``fn(case, obs, exp) -> list[Failure]``, once per observation (eager, tape,
  cudagraph);
* ``across=True``: ``fn(case, observations) -> list[Failure] | None``, once per Case over all of
  them (the recapture reference included); ``None``: nothing to judge, not counted as run;
* ``level="server"``: a check the server-level oracle's judge (:mod:`swafuzz.server.oracle`) calls
  at its point of the walk, skipped when disabled by name; a record names it ``"server:<name>"``.

``defence``: the defence-in-depth reason why no mutant is killed by this check alone, which the
zoo gate accepts and prints; every other check must be the sole killer of at least one mutant
(``swafuzz zoo`` ablation). Order: feature by feature, module by module as the record lists them,
then definition order. A record's ``checks`` name exactly its modules' checks; a check belongs to
one feature.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from swafuzz import features
from swafuzz.features import RecordError
from swafuzz.features.record import LEVELS, Check, check, registered

__all__ = ["LEVELS", "Check", "all_checks", "check", "check_names", "defence_in_depth",
           "every_check", "rank", "registered"]


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
            mine += [c for c in registered() if c.module == mod]
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


def rank(name: str) -> int:
    """``name``'s position in registry order (after every check when it is none: ``error``,
    ``crash``, ``timeout``)."""
    names = check_names()
    return names.index(name) if name in names else len(names)
