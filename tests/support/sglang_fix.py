"""Run an exported SGLang test with the export's fix applied (``fix.json``: ``module``,
``qualname``, ``old``, ``new``): the function's source with ``old`` (found exactly once) replaced
by ``new``, compiled in its own module's namespace and set in place of the release's, before
pytest collects the test. Used by ``tests/harness/test_export_upstream.py``:

    python tests/support/sglang_fix.py FIX.json TEST_FILE [pytest args]
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import textwrap


def apply(fix: dict) -> None:
    mod = importlib.import_module(fix["module"])
    *path, name = fix["qualname"].split(".")
    owner = mod
    for part in path:
        owner = getattr(owner, part)
    src = textwrap.dedent(inspect.getsource(getattr(owner, name)))
    if src.count(fix["old"]) != 1:
        raise SystemExit(f"fix: {fix['old']!r} occurs {src.count(fix['old'])} times in "
                         f"{fix['module']}:{fix['qualname']}, not once (another release?)")
    ns: dict = {}
    exec(compile(src.replace(fix["old"], fix["new"]), f"<fixed {fix['qualname']}>", "exec"),
         mod.__dict__, ns)
    setattr(owner, name, ns[name])


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        apply(json.load(f))
    import pytest

    sys.exit(pytest.main(sys.argv[2:]))
