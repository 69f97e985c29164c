"""Mutants of the ``sglang`` target: a fault in the release's own code on the objects the
adapter builds (one method of one instance), registered like the engine model's mutants
(:func:`swafuzz.targets.mutants.mutant`). :class:`SGLangMutant` is the factory (no SGLang import
until built): ``build`` names (``"module:attr"``) its :class:`SGLangEngine` subclass; its hooks
answer as the ``sglang`` target's; ``control`` names the unmutated target the zoo compares with.
"""

from __future__ import annotations

from typing import Any

from swafuzz import features
from swafuzz.targets.sglang.target import TARGET


class SGLangMutant:
    """A zoo mutant of the ``sglang`` target (module docstring)."""

    #: the engine class, ``"module:attr"`` (its module imports SGLang)
    build = ""
    #: the oracle validates the release's allocation choices, as for the target itself
    allocation = "observed"
    #: the unmutated target: the zoo's control for this mutant
    control = "sglang"

    def __new__(cls, case, **kwargs: Any):
        return features.load(cls.build)(case, **kwargs)  # imports SGLang (optional)

    #: the flag of :mod:`~swafuzz.targets.sglang.features` naming the release code the fault is
    #: in (empty: every release has it); a release without it is refused
    needs = ""

    @classmethod
    def supports(cls, subject) -> str | None:
        """The ``sglang`` target's answer, then whether the release has the code the fault is
        in (``needs``)."""
        why = TARGET.supports(subject)
        if why or not cls.needs:
            return why
        found = features.load("swafuzz.targets.sglang.features")  # imports SGLang (optional)
        if not getattr(found, cls.needs):
            return (f"mutant {getattr(cls, 'mutant_name', cls.__name__)}: sglang "
                    f"{found.VERSION} has no {cls.needs} path (the fault's code)")
        return None

    check_available = staticmethod(TARGET.check_available)
    versions = staticmethod(TARGET.versions)
