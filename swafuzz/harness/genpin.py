"""Same seed, same Cases: a unit's generation depends on its seed and identity only.

Hypothesis (6.131 and later) mixes *local constants* into generation: now and then it draws a
number or string found in the source of the non-library modules loaded in the process
(``hypothesis.internal.conjecture.providers._get_local_constants`` scans ``sys.modules``,
again whenever it grows). Which of swafuzz's modules a process has imported therefore changed
the Cases a seed gives: a unit run in the CLI's process (``--workers 1``, which has the CLI's
modules and the units run before it loaded) drew other Cases than the same unit in a fresh pool
process (``--workers 2``: 7 of 29 units differed), a resumed run other Cases than a fresh one
when the CLI imported the report's modules at its start, and a checkout other Cases than a
wheel install (site-packages is not "local").

:func:`pinned_generation` turns that source off for the duration of a unit: the local
constants are an empty set (Hypothesis's own global constants stay), so generation is a
function of the seed and the strategy. It touches a private name of Hypothesis: where that
name does not exist (releases before local constants, or a later rename) there is nothing to
pin and it does nothing; ``tests/harness/test_run_robustness.py`` fails if the pin stops
working.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def pinned_generation() -> Iterator[None]:
    """Within the block, Hypothesis draws no constants from the loaded modules."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without this module
        yield
        return
    get = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    empty_type = getattr(providers, "Constants", None)
    if get is None or cache is None or empty_type is None:  # pragma: no cover
        yield
        return
    empty = empty_type()
    cache.cache.clear()  # tuples computed from the local constants found so far
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()
