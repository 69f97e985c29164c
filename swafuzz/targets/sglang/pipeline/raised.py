"""Where the release raised, in words a bundle keeps on any machine, and the release's own
invariant checks that fire where Python cannot propagate them (an ``assert`` in a finalizer,
``__del__``: "Exception ignored in ..." on stderr, the run going on as if nothing happened)."""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import Iterator


def where(filename: str) -> str:
    """A raising file as a bundle names it on any machine: from the package on (``sglang/srt/...``
    below ``site-packages``, ``swafuzz/...`` in a checkout), else as given."""
    for mark in ("/site-packages/", "/dist-packages/"):
        if mark in filename:
            return filename.rsplit(mark, 1)[1]
    parts = filename.replace("\\", "/").split("/")
    if "swafuzz" not in parts:
        return filename
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("swafuzz"):])


def _release_assert(u) -> str | None:
    """An ``AssertionError`` raised in SGLang's code inside a finalizer, as one line (no
    addresses: the same Case words it the same way), or None for anything else."""
    if not isinstance(u.exc_value, AssertionError) or u.exc_traceback is None:
        return None
    tb = traceback.extract_tb(u.exc_traceback)
    if not tb or "/sglang/" not in tb[-1].filename.replace("\\", "/"):
        return None
    obj = getattr(u.object, "__qualname__", None) or type(u.object).__name__
    return (f"AssertionError: {u.exc_value} (in the finalizer {obj}, which cannot raise; at "
            f"{where(tb[-1].filename)}:{tb[-1].lineno})")


@contextlib.contextmanager
def finalizer_asserts() -> Iterator[list[str]]:
    """While a Case runs: the release's assertions that fail inside finalizers (objects dropped
    by reference count), each as :func:`_release_assert` words them, collected instead of printed;
    every other unraisable exception goes to the hook that was there before."""
    caught: list[str] = []
    prev = sys.unraisablehook

    def hook(u) -> None:
        line = _release_assert(u)
        if line is None:
            prev(u)
        else:
            caught.append(line)

    sys.unraisablehook = hook
    try:
        yield caught
    finally:
        sys.unraisablehook = prev
