"""Mutants of the ``sglang`` target: a fault put into the release's own code on the objects the
adapter builds (one method of one instance), registered in the bug zoo like the engine model's
mutants (:func:`swafuzz.targets.mutants.mutant`) but run against the installed release.

:class:`SGLangMutant` is the registered factory: nothing is imported from SGLang until an
engine is built; ``build`` names (``"module:attr"``) the mutant's engine class, a subclass of
:class:`~swafuzz.targets.sglang.engine.SGLangEngine` in a module that imports the adapter. Its
hooks answer as the ``sglang`` target does (``supports``, ``check_available``, ``versions``);
``control`` names the unmutated target the zoo runs as the control for it.
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
