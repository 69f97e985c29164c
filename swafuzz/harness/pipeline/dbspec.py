"""``--db``'s syntax, judged without importing Hypothesis (the CLI's pre-check answers a bad
value before anything heavy loads; :mod:`swafuzz.harness.pipeline.corpus` opens the database)."""

from __future__ import annotations

import os
from urllib.parse import urlparse


class DatabaseSpecError(ValueError):
    """A ``--db`` value that cannot be used; the message names the field and what is allowed."""


def check_spec(spec: str | None) -> None:
    """Validate ``--db`` without opening anything (so bad input writes nothing)."""
    if spec is None or spec.lower() == "none":
        return
    if "://" in spec:
        u = urlparse(spec)
        if u.scheme != "redis":
            raise DatabaseSpecError(f"--db: scheme {u.scheme!r} is not allowed; use a directory, "
                                    "redis://HOST:PORT[/N] or none")
        try:
            port = u.port
        except ValueError:
            port = None
        if not u.hostname or port is None:
            raise DatabaseSpecError(f"--db: {spec!r} needs a host and a port "
                                    "(redis://HOST:PORT[/N])")
        if u.path.strip("/") and not u.path.strip("/").isdigit():
            raise DatabaseSpecError(f"--db: database number {u.path.strip('/')!r} must be an "
                                    "integer (redis://HOST:PORT/N)")
        try:
            import redis  # noqa: F401
        except ImportError:
            raise DatabaseSpecError("--db: redis:// needs the 'redis' package "
                                    "(pip install 'swafuzz[redis]')") from None
        return
    if os.path.exists(spec) and not os.path.isdir(spec):
        raise DatabaseSpecError(f"--db: {spec!r} exists and is not a directory")
