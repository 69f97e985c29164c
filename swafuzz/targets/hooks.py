"""Engine class attributes that features fill in through their parts.

:class:`PartSlot` is a class attribute resolved on use through :func:`swafuzz.features.slot`
(a slot of a side's part, :mod:`swafuzz.features.parts`), so the engine names no feature module
and a subclass (a mutant, the ``sglang`` target, a plugin) still replaces the attribute by
assigning its own class. An ``optional`` slot reads None where no feature's part fills it (the
path then runs without that extension).
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.features.parts import SIDES


class PartSlot:
    """``attr = PartSlot("engine", "step_path")``: reading ``Engine.attr`` or ``engine.attr``
    gives what the one feature's part filling that slot holds (``optional=True``: None when
    no part fills it)."""

    def __init__(self, side: str, name: str, optional: bool = False) -> None:
        if not hasattr(SIDES[side], name):
            raise KeyError(f"no slot {name!r} of {SIDES[side].__name__}")
        self.side, self.name, self.optional = side, name, optional

    def __get__(self, obj, owner=None):
        return features.slot(self.side, self.name, self.optional)
