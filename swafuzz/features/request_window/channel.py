"""The request window's channel: what the window / late-layer tail path files under the feature's
name (:data:`CHANNEL`) in an Observation (:class:`WindowChannel`: the path's forwards,
:class:`features.request_window.window.WinFwdObs`, and the window's tags and ring bytes after
every step) and an Expectation (the window oracle's ``WindowExp``), and the accessors
:func:`observed` / :func:`expected`. Pure Python: the oracle, the target and the checks import it."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CHANNEL", "WindowChannel", "expected", "observed"]

CHANNEL = "request_window"


@dataclass
class WindowChannel:
    """The window / tail path's observations of one run."""

    forwards: list = field(default_factory=list)  # WinFwdObs, in execution order
    steps: list = field(default_factory=list)  # WinStepObs, one after every step


def observed(obs) -> WindowChannel:
    """``obs``'s window channel (an empty one when the target filled none)."""
    return obs.channel(CHANNEL, WindowChannel)


def expected(exp):
    """``exp``'s window expectation (``WindowExp``); None for a Case without the path."""
    channels = getattr(exp, "channels", None)
    return channels.get(CHANNEL) if channels else None
