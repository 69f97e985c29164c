"""The shared corpus: Hypothesis's example database for ``swafuzz run``.

``--db`` (:func:`open_database`): default ``OUT/.hypothesis-db``; ``DIR``, a directory database
(shareable on one machine); ``redis://HOST:PORT[/DB]``, shared by several machines (``pip install
'swafuzz[redis]'``); ``none``, off. Failing Cases are stored under ``swafuzz:<target>:<kind>``
(``Campaign.db_key``) and replayed first by the next campaign of the same target and kind.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from hypothesis.database import DirectoryBasedExampleDatabase


class DatabaseSpecError(ValueError):
    """A ``--db`` value that cannot be used; the message names the field and what is allowed."""


def default_db_path(out_dir: str) -> str:
    return os.path.join(out_dir, ".hypothesis-db")


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


def open_database(spec: str | None, out_dir: str):
    """The Hypothesis database for ``--db spec`` (None for ``none``). Redis is pinged first, so
    an unreachable server is a clear error, not a stream of warnings in the middle of a run."""
    if spec is None:
        return DirectoryBasedExampleDatabase(default_db_path(out_dir))
    if spec.lower() == "none":
        return None
    if "://" in spec:  # redis: an optional dependency (the 'redis' extra)
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        u = urlparse(spec)
        db = int(u.path.strip("/") or 0)
        client = redis.Redis(host=u.hostname, port=u.port, db=db, socket_connect_timeout=5)
        try:
            client.ping()
        except redis.exceptions.RedisError as e:
            raise DatabaseSpecError(f"--db: cannot reach {spec} ({e})") from None
        return RedisExampleDatabase(client)
    return DirectoryBasedExampleDatabase(spec)
