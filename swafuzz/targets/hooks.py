"""Engine class attributes that features fill in through the registry.

:class:`FeatureHook` is a class attribute resolved on use through
:func:`swafuzz.features.hook` (a hook point of :data:`swafuzz.features.HOOK_POINTS`), so the
engine names no feature module and a subclass (a mutant, the ``sglang`` target, a plugin) still
replaces the attribute by assigning its own class. An ``optional`` hook reads None where no
feature declares the point (the path then runs without that extension).
"""

from __future__ import annotations

from swafuzz import features


class FeatureHook:
    """``attr = FeatureHook("engine.step_path")``: reading ``Engine.attr`` or ``engine.attr``
    gives what the one feature declaring that hook point plugs in (``optional=True``: None
    when no feature declares it)."""

    def __init__(self, point: str, optional: bool = False) -> None:
        if point not in features.HOOK_POINTS:
            raise KeyError(f"no hook point {point!r}; known: {', '.join(features.HOOK_POINTS)}")
        self.point = point
        self.optional = optional

    def __get__(self, obj, owner=None):
        if self.optional and not features.hooks(self.point):
            return None
        return features.hook(self.point)
