"""The radix kind's release refusal (``server_rules.refusal``) reads the release's code, not its
number: a fake ``sglang`` of the shapes met (no SGLang needed). 0.5.12: no unified radix cache;
0.5.19: the unified cache but allocators that do not list their free pages; a release without
the allocator package at all; 0.5.20 on: driven."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest

from swafuzz.features.radix_tree.server_rules import refusal

ON = {"disable_radix_cache": False}


def _fake(monkeypatch, unified: bool, publish: str | None, allocator: str | None) -> None:
    """``sglang.srt.mem_cache`` with ``common`` (``publish`` a function of it), the unified cache
    package or not, and ``allocator.base`` absent (None), without (``"bare"``) or with
    (``"lists"``) ``get_all_free_pages``."""
    def mod(name: str, **attrs) -> types.ModuleType:
        m = types.ModuleType(name)
        m.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        m.__path__ = []
        m.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, m)
        return m

    for name in ("sglang", "sglang.srt", "sglang.srt.mem_cache"):
        mod(name)
    mod("sglang.srt.mem_cache.common", **({publish: lambda *a, **k: None} if publish else {}))
    for gone in ("sglang.srt.mem_cache.unified_cache", "sglang.srt.mem_cache.allocator",
                 "sglang.srt.mem_cache.allocator.base"):
        monkeypatch.setitem(sys.modules, gone, None)  # None in sys.modules: not importable
    if unified:
        mod("sglang.srt.mem_cache.unified_cache")
    if allocator is not None:
        base = type("BaseTokenToKVPoolAllocator", (), {})
        if allocator == "lists":
            base.get_all_free_pages = lambda self: []
        mod("sglang.srt.mem_cache.allocator")
        mod("sglang.srt.mem_cache.allocator.base", BaseTokenToKVPoolAllocator=base)


@pytest.mark.parametrize("unified,publish,allocator,why", [
    (False, None, None, "no unified radix cache"),
    (True, None, "lists", "no unified radix cache"),
    (True, "maybe_cache_unfinished_req", "bare", "do not list their free pages"),
    (True, "maybe_cache_unfinished_req", None, "do not list their free pages"),
    (True, "maybe_cache_unfinished_req", "lists", None),
    (True, "checkpoint_kv_cache", "lists", None),
])
def test_the_release_refusal_reads_the_release(monkeypatch, unified, publish, allocator, why):
    _fake(monkeypatch, unified, publish, allocator)
    got = refusal(ON, "X")
    if why is None:
        assert got is None
    else:
        assert got.startswith("config.disable_radix_cache: sglang X") and why in got, got
        assert got.endswith("(allowed: true)")
    assert refusal({"disable_radix_cache": True}, "X") is None  # off: nothing to refuse
