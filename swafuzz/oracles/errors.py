"""The oracle's verdicts on a Case it cannot run (a leaf: imports nothing; every oracle part raises
these, :mod:`oracles.engine` re-exports them).

* :class:`CaseInfeasible`: the contract cannot run a step (or the configuration);
* :class:`AllocationRejected`: an observed allocation no valid allocator could have made;
* :class:`OracleError`: the oracle reached a state a valid Case cannot produce.
"""

from __future__ import annotations

__all__ = ["AllocationRejected", "CaseInfeasible", "OracleError"]


class CaseInfeasible(ValueError):
    """The contract cannot run step ``step`` (``-1``: the configuration); ``reason`` says why."""

    def __init__(self, step: int, reason: str):
        where = "config" if step < 0 else f"steps[{step}]"
        super().__init__(f"{where}: infeasible: {reason}")
        self.step = step
        self.reason = reason


class AllocationRejected(ValueError):
    """An observed allocation (``observed_alloc``) that no valid allocator could have made at
    step ``step``: the page was not free, page 0, live elsewhere, or the token broke the page
    rules (a token that continues a request's last page sits at the next offset of that page on
    both sides; a token at a page boundary starts a fresh page at offset 0)."""

    def __init__(self, step: int, reason: str):
        super().__init__(f"steps[{step}]: observed allocation rejected: {reason}")
        self.step = step
        self.reason = reason


class OracleError(RuntimeError):
    """The oracle reached a state a valid Case cannot produce (a bug in the oracle or contract)."""
