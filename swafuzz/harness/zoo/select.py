"""Which mutants a ``swafuzz zoo`` run takes (:mod:`swafuzz.harness.zoo.matrix`): all, or the
``--mutant`` names; the mutants of a release target not installed here are left out of a
whole-zoo run (:func:`not_here`), and each mutant's control is its unmutated target
(:func:`control_of`)."""

from __future__ import annotations

from swafuzz import features, targets
from swafuzz.targets.mutants import load_all

__all__ = ["control_of", "default_zoo", "not_here", "selected"]


def control_of(spec) -> str:
    """The unmutated target of a mutant (``unified``, or a release target)."""
    return getattr(spec.engine, "control", "unified")


def not_here() -> dict[str, str]:
    """Mutants whose target cannot run here (no release installed): name -> why."""
    out = {}
    for name, spec in load_all().items():
        check = getattr(spec.engine, "check_available", None)
        if control_of(spec) != "unified" and callable(check):
            try:
                check()
            except targets.TargetUnavailable as e:
                out[name] = str(e)
    return out


def default_zoo() -> dict:
    """Every mutant but those only resource-gated kinds reach (``Kind.ram_bytes > 0``: GBs per
    Case), which run when named with ``--mutant``."""
    gated = set(features.gated_kinds())
    return {n: s for n, s in load_all().items() if not set(s.kinds) <= gated}


def selected(names: list[str] | None, skip=()) -> dict:
    """The mutants to run: the default zoo (:func:`default_zoo`) but ``skip`` (:func:`not_here`),
    or those ``--mutant`` names (in the order given); an unknown name is a ``ValueError`` naming
    it and the known ones."""
    zoo = load_all()
    if not names:
        return {n: s for n, s in default_zoo().items() if n not in skip}
    unknown = [n for n in names if n not in zoo]
    if unknown:
        raise ValueError(f"--mutant: {unknown[0]!r} is not a mutant; known: "
                         f"{', '.join(sorted(zoo))}")
    return {n: zoo[n] for n in dict.fromkeys(names)}
