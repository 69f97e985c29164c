"""The real int32 kernels under test: translate, store, translate_store.

One signature (:mod:`kernels.torch_impl`), three implementations: ``torch`` (upstream's index +
cast / index_put), ``triton`` (compiled on GPU, interpreted on CPU), ``cuda`` (NVRTC, GPU only),
imported lazily. Launches: :func:`kernels.launch.launch`; contracts: :mod:`kernels.contracts`.
No forward modes or graphs here.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

IMPLS = ("torch", "triton", "cuda")

_MODULES = {"torch": "swafuzz.kernels.torch_impl", "triton": "swafuzz.kernels.triton_impl",
            "cuda": "swafuzz.kernels.cuda_impl"}


def get_impl(name: str) -> ModuleType:
    """The implementation module ``name`` (one of :data:`IMPLS`), exporting ``translate``,
    ``store`` and ``translate_store``."""
    if name not in _MODULES:
        raise ValueError(f"kernel implementation must be one of {', '.join(IMPLS)} (got {name!r})")
    return importlib.import_module(_MODULES[name])


def available_impls() -> list[str]:
    """The implementations usable here, in :data:`IMPLS` order: ``torch``; ``triton`` if
    installed with CUDA or ``TRITON_INTERPRET=1`` (set before import); ``cuda`` with CUDA."""
    import torch.cuda  # the device probe only (importing this package stays free of torch)

    gpu = torch.cuda.is_available()
    names = ["torch"]
    if importlib.util.find_spec("triton") is not None and (
        gpu or os.environ.get("TRITON_INTERPRET") == "1"
    ):
        names.append("triton")
    if gpu:
        names.append("cuda")
    return names
