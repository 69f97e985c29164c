"""torchvision stand-in (swafuzz test support; see tests/support/torchvision_standin/README.txt).

The version is the release that pairs with the harness's torch, so transformers' version gates
parse it; every name other than the submodules is a placeholder that raises when used.
"""

import _swafuzz_torchvision_standin as _standin

__version__ = "0.28.0"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _standin.placeholder(__name__, name)
