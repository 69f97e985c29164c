"""Environment variables a release reads (its deployment's ``SGLANG_*`` settings), set for a
block and restored after: a variable unset before is unset again (no SGLang import)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Mapping


@contextlib.contextmanager
def environ(updates: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` updated with ``updates`` inside the block, as it was after."""
    old = {k: os.environ.get(k) for k in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
