"""Shared body of the torchvision stand-in's modules (test support, see README.txt)."""

import enum


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def placeholder(module: str, name: str):
    """A stand-in for ``module.name``: importable, and raising if anything uses it."""

    class _Missing:
        def __init__(self, *a, **k):
            raise NotImplementedError(f"{module}.{name}: torchvision stand-in (swafuzz test "
                                      "support); the real package is not installed")

        def __class_getitem__(cls, item):
            return cls

    _Missing.__name__ = _Missing.__qualname__ = name
    _Missing.__module__ = module
    return _Missing
