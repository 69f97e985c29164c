"""What the release's pool code reads of the per-request SWA ring, set on the ``sglang`` target's
DSV4 pool object (hook ``sglang.real_pool``). Imports nothing of SGLang: every Case's pool
object gets it, on every release (one without a ring never reads the attribute)."""

from __future__ import annotations


def real_pool_attrs(real_pool, config) -> None:
    """``swa_req_ring_size``: the Case's ring rows per request slot (``pool.swa_ring``), None
    without a ring (0.5.20+ reads it)."""
    real_pool.swa_req_ring_size = config.swa_ring or None
