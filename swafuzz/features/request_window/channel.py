"""The request window's channel (issue 12): what the window / late-layer tail path files under
the feature's name in an Observation and an Expectation, and the accessors that read it.

Pure Python (the oracle side, the target side and the checks all import it):

* :data:`CHANNEL`: the key, the feature's name;
* :class:`WindowChannel`: the observed data, the path's forwards
  (:class:`features.request_window.window.WinFwdObs`, per layer the store locations and the
  workspace bytes) and after every step the window's tags and ring bytes
  (:class:`features.request_window.window.WinStepObs`); filled by
  :meth:`features.request_window.engine.WindowPath.observe_run` / ``observe_step``;
* :func:`observed` / :func:`expected`: an Observation's channel (empty for a Case without the
  path) and an Expectation's (the window oracle's ``WindowExp``; None without the path).
"""

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
