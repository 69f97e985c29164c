"""What the release's backend code reads of DSpark, set on every backend object the ``sglang``
target builds without its constructor (hook ``sglang.bare_backend``). Imports nothing of
SGLang."""

from __future__ import annotations


def bare_backend_attrs(backend) -> None:
    """``is_dspark_draft``: False (the adapter's bare backends are never a DSpark draft's)."""
    backend.is_dspark_draft = False
