"""What a campaign sets around each Hypothesis search (:mod:`.campaign`): the same draws in
any process (the literals pool fixed to swafuzz's own source) and Hypothesis in the run's words
(its reports and warnings as one-line notes; its wall-clock cap on shrinking lifted, so a shrink
is bounded by a count of Cases)."""

from __future__ import annotations

import hashlib
import os
import pickle
import warnings
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

import hypothesis
from hypothesis.database import ExampleDatabase
from hypothesis.errors import HypothesisWarning
from hypothesis.internal import constants_ast
from hypothesis.internal.conjecture import engine as hypothesis_engine
from hypothesis.internal.conjecture import providers as hypothesis_providers
from hypothesis.internal.floats import float_to_int
from hypothesis.reporting import with_reporter
from sortedcontainers import SortedSet

import swafuzz


@lru_cache(maxsize=1)
def source_constants():
    """The literals of swafuzz's own source files (read from the files, loaded or not, in a
    checkout or in site-packages): the pool Hypothesis draws "local" constants from while a
    campaign draws (see :func:`same_draws_in_any_process`). Parsing them costs ~0.6 s CPU, so
    the literals are kept in the user's cache (``$XDG_CACHE_HOME/swafuzz``), keyed by the
    sources' and Hypothesis's bytes; an unreadable or unwritable cache only costs the parse."""
    root = os.path.dirname(os.path.abspath(swafuzz.__file__))
    sources = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        sources += [os.path.join(d, n) for n in sorted(files) if n.endswith(".py")]
    blobs = []
    for path in sources:
        with open(path, "rb") as f:
            blobs.append(f.read())
    key = hashlib.sha256(repr((hypothesis.__version__, blobs)).encode()).hexdigest()[:32]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "swafuzz", f"constants-{key}.pickle")
    try:
        with open(cache, "rb") as f:
            ints, floats, bytes_, strings = pickle.load(f)
    except Exception:  # noqa: BLE001 - no usable cache: parse the sources
        pool = hypothesis_providers.Constants(integers=SortedSet(), floats=SortedSet(
            key=float_to_int), bytes=SortedSet(), strings=SortedSet())
        for blob in blobs:
            try:
                pool |= constants_ast._constants_from_source(blob, limit=True)
            except Exception:  # noqa: BLE001 - a file Hypothesis cannot parse adds nothing
                pass
        try:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            tmp = f"{cache}.{os.getpid()}"
            with open(tmp, "wb") as f:
                pickle.dump((list(pool.integers), list(pool.floats), list(pool.bytes),
                             list(pool.strings)), f)
            os.replace(tmp, cache)
        except OSError:
            pass
        return pool
    return hypothesis_providers.Constants(integers=SortedSet(ints), floats=SortedSet(
        floats, key=float_to_int), bytes=SortedSet(bytes_), strings=SortedSet(strings))


@contextmanager
def same_draws_in_any_process() -> Iterator[None]:
    """Hypothesis (6.131+) sometimes draws a literal found in the source of the *local* modules
    loaded in the process, and which modules are loaded differs between a fresh run and a
    resumed one, a pool process and the parent, a checkout and a wheel. Inside this block the
    pool is fixed to the literals of swafuzz's own source (:func:`source_constants`), so the
    draws depend on the seed, the strategy and swafuzz's source alone. A Hypothesis without the
    pool is left as it is."""
    get = getattr(hypothesis_providers, "_get_local_constants", None)
    cache = getattr(hypothesis_providers, "CONSTANTS_CACHE", None)
    if get is None or cache is None or not hasattr(constants_ast, "_constants_from_source"):
        yield
        return
    hypothesis_providers._get_local_constants = source_constants
    cache.cache.clear()  # (choice type, constraints) -> permitted constants, local ones included
    try:
        yield
    finally:
        hypothesis_providers._get_local_constants = get
        cache.cache.clear()


@contextmanager
def hypothesis_in_our_words(notes: list[str], kind: str) -> Iterator[None]:
    """Inside this block Hypothesis prints nothing: what it would report (its slow-shrink
    warning, a health or flakiness message, a warning of its own) is appended to ``notes`` as
    one line in the run's words, shown by the unit's caller. Its wall-clock cap on shrinking
    (five minutes) is lifted: a shrink ends after ``shrink_budget`` Cases (or Hypothesis's own
    count of shrinks), the same on a busy machine as on a quiet one."""

    def say(text: object) -> None:
        notes.append(_our_words(str(text), kind))

    had = getattr(hypothesis_engine, "MAX_SHRINKING_SECONDS", None)
    if had is not None:
        hypothesis_engine.MAX_SHRINKING_SECONDS = 10**9
    try:
        with with_reporter(say), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HypothesisWarning)
            yield
        for w in caught:
            if issubclass(w.category, HypothesisWarning):
                say(w.message)
            else:  # not Hypothesis's: as it would have been shown
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    finally:
        if had is not None:
            hypothesis_engine.MAX_SHRINKING_SECONDS = had


def _our_words(text: str, kind: str) -> str:
    """One line for a message Hypothesis reported while searching kind ``kind``."""
    low = text.lower()
    if "shrink" in low and ("slow" in low or "five minutes" in low):
        why = "Hypothesis stopped shrinking early (too slow by its own measure)"
    elif "health" in low or "filter" in low or "too large" in low:
        why = "Hypothesis's health check"
    elif "flaky" in low or "inconsistent" in low:
        why = "a Case's outcome changed between runs (flaky)"
    else:
        why = "Hypothesis said"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"kind {kind}: {why}: {first[:160]}"


def flaky_in_our_words(e: BaseException, kind: str) -> str:
    """The one line of a Hypothesis ``Flaky`` with no failing Case behind it (its data
    generation or a replay behaved differently between runs): the harness's failure (exit 3),
    not the code under test's, named in the run's words instead of Hypothesis's traceback."""
    first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return (f"kind {kind}: Hypothesis found the search inconsistent between runs with no "
            f"failing Case ({type(e).__name__}: {first[:160]}): the Cases of this kind are not "
            "drawn the same way twice; nothing was judged (a harness failure, not a finding)")


class HarnessStops(ExampleDatabase):
    """The run's example database as one Hypothesis search sees it: once ``stopping`` is set
    (the harness ends the search with an exception of its own - the examples spent, out of
    time, the shrink budget or a known entry's cap - which Hypothesis takes for a failure) its
    saves and moves are dropped. Else the Case that merely ran past the budget would be saved
    and replayed first by ``--resume`` (reuse phase), shifting every later draw of the unit."""

    def __init__(self, db: ExampleDatabase):
        super().__init__()
        self.db, self.stopping = db, False

    def save(self, key: bytes, value: bytes) -> None:
        if not self.stopping:
            self.db.save(key, value)

    def fetch(self, key: bytes):
        return self.db.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.db.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if not self.stopping:
            self.db.move(src, dest, value)
