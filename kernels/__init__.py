"""The real int32 kernels under test: translate, store, translate_store.

Three implementations with one signature each (see ``kernels/api.md`` in the docstrings of
``torch_impl``): ``torch`` (the index + cast / index_put path upstream uses), ``triton``
(compiled on GPU, interpreted on CPU), ``cuda`` (CUDA C++ twins compiled with NVRTC; GPU only).
Every non-aten launch goes through :func:`kernels.launch.launch`. Contracts live in
``kernels.contracts``. This package knows nothing about forward modes or graphs.
"""
