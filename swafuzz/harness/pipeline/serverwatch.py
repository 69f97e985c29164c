"""Imported only as a forkserver preload (:func:`swafuzz.harness.pipeline.unit.pool_context`):
the forkserver, which imported torch and the harness, ends at once (``os._exit``) when the CLI
that started it dies, e.g. by kill -9. Without it the server notices only when its keep-alive
pipe closes and then tears torch down for seconds (tens of seconds on a loaded machine).
"""

from __future__ import annotations

import os

from swafuzz.harness.pipeline.runlock import die_with

die_with(os.getppid())  # the forkserver's parent: the CLI that started it
