"""torchvision stand-in (swafuzz test support; see tests/support/torchvision_standin)."""

import _swafuzz_torchvision_standin as _standin

InterpolationMode = _standin.InterpolationMode


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _standin.placeholder(__name__, name)
