"""Where the release raised (``targets/sglang/pipeline/raised.py``, no SGLang needed): files named
from the package on, and the release's assertions that fail inside a finalizer collected as one
line each (the run's error when nothing failed first: ``steps.run_server_case``) instead of
"Exception ignored in ..." on stderr; other finalizer errors reach the previous hook."""

from __future__ import annotations

import sys

import pytest

from swafuzz.targets.sglang.pipeline.raised import finalizer_asserts, where


@pytest.mark.parametrize("path,want", [
    ("/w/.venv-sglang-0.5.22/lib/python3.11/site-packages/sglang/srt/mem_cache/x.py",
     "sglang/srt/mem_cache/x.py"),
    ("/usr/lib/python3/dist-packages/sglang/a.py", "sglang/a.py"),
    ("/home/u/swafuzz/swafuzz/targets/sglang/pipeline/steps.py",
     "swafuzz/targets/sglang/pipeline/steps.py"),
    ("/tmp/elsewhere.py", "/tmp/elsewhere.py"),
])
def test_a_raising_file_is_named_from_its_package(path, want):
    assert where(path) == want


def _finalizing(filename: str, exc: str):
    """An object whose ``__del__`` (compiled as if in ``filename``) raises ``exc``."""
    ns: dict = {}
    exec(compile(f"class Result:\n    def __del__(self):\n        raise {exc}\n",  # noqa: S102
                 filename, "exec"), ns)
    return ns["Result"]


def test_a_release_assert_in_a_finalizer_is_collected_not_printed(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    release = _finalizing("/v/site-packages/sglang/srt/mem_cache/core.py",
                          "AssertionError('dropped with undrained values')")
    ours = _finalizing("/v/site-packages/other/core.py", "AssertionError('x')")
    typed = _finalizing("/v/site-packages/sglang/srt/y.py", "ValueError('y')")
    with finalizer_asserts() as caught:
        release()
        ours()
        typed()
    assert caught == ["AssertionError: dropped with undrained values (in the finalizer "
                      "Result.__del__, which cannot raise; at sglang/srt/mem_cache/core.py:3)"]
    assert [type(u.exc_value).__name__ for u in seen] == ["AssertionError", "ValueError"]
    assert sys.unraisablehook == seen.append  # restored
    release()  # outside: the previous hook again
    assert len(seen) == 3 and caught == caught[:1]
