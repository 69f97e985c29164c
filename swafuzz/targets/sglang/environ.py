"""Set for a block and restored after (no SGLang import): environment variables a release reads
(its deployment's ``SGLANG_*`` settings; a variable unset before is unset again), and attributes
of its modules and classes (the patches of the server mutants and the execution fixes)."""

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


@contextlib.contextmanager
def set_attr(obj, name: str, value) -> Iterator[None]:
    """``obj.name`` is ``value`` inside the block, restored after it (a patch of the release)."""
    real = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, real)
