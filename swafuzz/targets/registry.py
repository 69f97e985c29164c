"""The target registry's state: names bound to factories, and where plugin targets came from.

A leaf (imports nothing of swafuzz), so :mod:`swafuzz.targets` and :mod:`.plugins` both import
it without a cycle. :data:`TARGETS`: name -> factory; :data:`ORIGINS`: name -> plugin record
(absent: built in); :func:`register` binds a name (origin recorded while a plugin loads,
:func:`loading`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

__all__ = ["TARGETS", "ORIGINS", "register", "current_origin", "loading"]

TARGETS: dict[str, Callable[..., Any]] = {}
#: name -> plugin record (``{"module", "dist", "version", "entry_point"?}``); absent: built in
ORIGINS: dict[str, dict[str, Any]] = {}

_origin_stack: list[dict[str, Any]] = []


def current_origin() -> dict[str, Any] | None:
    """The plugin record of the plugin loading now (None: no plugin is loading)."""
    return dict(_origin_stack[-1]) if _origin_stack else None


@contextlib.contextmanager
def loading(rec: dict[str, Any]) -> Iterator[None]:
    """Targets registered inside this block come from the plugin ``rec``."""
    _origin_stack.append(rec)
    try:
        yield
    finally:
        _origin_stack.pop()


def register(name: str, factory: Callable[..., Any]) -> None:
    """Register ``factory(case, *, impl, executor, name) -> engine`` under ``name`` (its plugin
    origin recorded while :func:`loading`)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"register(name={name!r}): name must be a non-empty string")
    if not callable(factory):
        raise ValueError(f"register({name!r}, factory={factory!r}): factory must be callable")
    TARGETS[name] = factory
    rec = current_origin()
    if rec is not None and not (getattr(factory, "__module__", "") or "").startswith("swafuzz."):
        ORIGINS[name] = rec
    else:
        ORIGINS.pop(name, None)
