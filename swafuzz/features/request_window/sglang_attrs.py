"""What the release's pool code reads of the request window, set on the ``sglang`` target's DSV4
pool object (hook ``sglang.real_pool``). Imports nothing of SGLang: every Case's pool object
gets it, on every release."""

from __future__ import annotations


def real_pool_attrs(real_pool, config) -> None:
    """``request_window``: None on the harness's own pool object (the window path builds its own
    pool object with the release's window, :mod:`features.request_window.sglang`)."""
    real_pool.request_window = None
