"""The declaration of one step op a feature owns (:class:`StepOp`).

A feature whose Cases need an op of their own (a step the dense base ops do not describe)
declares it beside its Case fields (``fields.py``, ``OPS``, a tuple of :class:`StepOp`) and
plugs the tuple into hook point ``scenario.step_ops``. :mod:`swafuzz.scenarios.schema` adds the
declared ops to :data:`~swafuzz.scenarios.schema.OPS` (and to ``FORWARD_OPS`` when they run a
forward), :mod:`swafuzz.scenarios.validate` parses them from the declaration, and what the op
does is reached through the registry: the shadow's semantics (``oracle.step_ops``), the
execution path (``oracle.path_ops``), the engine's step (``engine.step_ops``). This module
imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the pools a forward op writes
POOLS = ("target", "draft")
#: the base step fields an op may take (a feature's own step fields name their ops themselves)
BASE_FIELDS = ("rid", "length", "rids", "tokens", "exec")


@dataclass(frozen=True)
class StepOp:
    """One step op: its ``name``, a one-line ``doc`` and ``after``, the op it follows in
    :data:`~swafuzz.scenarios.schema.OPS` (which fixes the order the parser's error lists it).

    ``fields``: the base step fields it takes (of :data:`BASE_FIELDS`; without ``exec`` it runs
    eagerly only). ``pool``: the pool its one forward writes (empty: it runs no forward).
    ``emit``: base fields written to JSON even at their default for this op. ``empty_rids``:
    ``rids`` may be empty (the op still runs, with nothing of its own). ``grows``: the tokens
    every request in ``rids`` gains (the arithmetic oracles' request lengths).
    """

    name: str
    doc: str
    after: str
    fields: tuple[str, ...] = ()
    pool: str = ""
    emit: tuple[str, ...] = ()
    empty_rids: bool = False
    grows: int = 0

    @property
    def forward(self) -> bool:
        """Whether the op runs a forward."""
        return bool(self.pool)

    def problem(self) -> str | None:
        """What is malformed in the declaration, or None."""
        if not self.name or not self.doc or not self.after:
            return f"{self.name!r}: name, doc and after must not be empty"
        bad = [f for f in (*self.fields, *self.emit) if f not in BASE_FIELDS]
        if bad:
            return (f"{self.name}: fields / emit must be among {', '.join(BASE_FIELDS)} "
                    f"(got {', '.join(bad)})")
        if self.pool and self.pool not in POOLS:
            return f"{self.name}: pool must be one of {', '.join(POOLS)} (got {self.pool!r})"
        if self.grows < 0:
            return f"{self.name}: grows must be >= 0 (got {self.grows})"
        return None
