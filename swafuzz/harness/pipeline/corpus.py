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

from swafuzz.harness.pipeline.dbspec import DatabaseSpecError, check_spec

__all__ = ["DatabaseSpecError", "check_spec", "default_db_path", "open_database"]


def default_db_path(out_dir: str) -> str:
    return os.path.join(out_dir, ".hypothesis-db")


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
