"""The ring's channel (addendum §2.1): the engine's exposed per-request SWA ring state, filed
under the feature's name in every StepObs of a ring Case, and the accessors that read it.

Pure Python (the oracle side, the target side and the checks all import it). The state is
``{"slots": {rid: request slot}, "free_slots": [...], "available": int, "swa_available": int,
"swa_paged_available": int, "swa_paged_size": int}`` (the ring allocators' ``ring_state``).
"""

from __future__ import annotations

__all__ = ["CHANNEL", "observed_states", "state"]

CHANNEL = "ring"


def state(step_obs) -> dict | None:
    """The ring state a step exposed; None when the target exposed none."""
    return step_obs.channel(CHANNEL)


def observed_states(channels: list[dict] | None) -> list[dict | None] | None:
    """Per step the exposed ring state, from the steps' channels (None: no observed steps)."""
    return None if channels is None else [c.get(CHANNEL) for c in channels]
