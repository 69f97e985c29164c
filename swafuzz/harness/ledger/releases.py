"""Release names as ``swafuzz bisect --releases`` takes them (``X.Y.Z[.postN]``, ``A..B`` or
``A,B,...``): their syntax and order, without importing a target (the CLI's pre-check decides a
mistyped spec before anything heavy loads; :mod:`swafuzz.harness.ledger.bisect` the rest)."""

from __future__ import annotations

import re

from swafuzz.harness.cli.usage import UsageError

REL = re.compile(r"^\d+\.\d+\.\d+(\.post\d+)?$")


def release_key(v: str) -> tuple[int, ...]:
    """Sort key of a release name: ``0.5.13`` < ``0.5.13.post1`` < ``0.5.14``."""
    base, _, post = v.partition(".post")
    return (*(int(x) for x in base.split(".")), int(post) if post else -1)


def spec_names(spec: str, known: tuple[str, ...] = ()) -> tuple[str, str] | list[str]:
    """The ends ``(A, B)`` of ``A..B`` or the names of ``A,B,...``; UsageError naming the
    field for a name that is not ``X.Y.Z[.postN]`` or an empty range (``known``: the target's
    releases, named in the message when given)."""
    also = f" (known: {', '.join(known)})" if known else ""
    if ".." in spec:
        lo, _, hi = spec.partition("..")
        for v in (lo, hi):
            if not REL.match(v):
                raise UsageError(f"--releases: {v!r} is not a release X.Y.Z[.postN]{also}")
        if release_key(lo) > release_key(hi):
            raise UsageError(f"--releases: {lo}..{hi} is empty (the first is after the last)")
        return lo, hi
    out = [v.strip() for v in spec.split(",") if v.strip()]
    bad = [v for v in out if not REL.match(v)]
    if bad or not out:
        raise UsageError(f"--releases: {', '.join(bad) or spec!r}: releases X.Y.Z[.postN], "
                         f"as A..B or A,B,...{also}")
    return out
