"""The ``remap`` op on the unified engine (feature ``remap``, spec §2.8): the allocator rebuilds
the mapping and the engine registers it again with every consumer pool
(:meth:`~swafuzz.targets.engine.UnifiedEngine.reregister_mapping`; the ``sglang`` target
registers it through the release). Reached through hook ``engine.step_ops``."""

from __future__ import annotations


def step_remap(eng, i: int, s) -> list:
    """``remap``: no forward; the mapping rebuilt and registered again."""
    eng.reregister_mapping()
    return []


STEP_OPS = {"remap": step_remap}
