"""The Case: swafuzz's input language. Plain data, JSON-serialisable, no tensors.

A pool configuration, a graph/speculative configuration, a payload seed and a list of steps;
everything else (slot ids, mapping, payload and expected pool bytes) derives from it
deterministically, so a Case is its own repro bundle. The contract ``targets/`` and ``oracles/``
implement independently is ``swafuzz/features/<feature>/SEMANTICS.md``; the common part (pool,
allocation policy, steps, payload, graphs) is ``features/dense/SEMANTICS.md``, which indexes the
others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from swafuzz.scenarios.schema import (
    ALWAYS_EMITTED,
    CASE_VERSION,
    DSV4_PAGE_ALIGN,
    DSV4_TOKEN_BYTES,
    EXECS,
    FORWARD_OPS,
    OPS,
    POISON_BYTE,
    ROW_DTYPES,
    ROW_ITEMSIZE,
    STEP_ALWAYS_EMITTED,
    STEP_OPS,
    CaseError,
    GraphConfig,
    PoolConfig,
    Step,
    field_default,
    json_fields,
)
from swafuzz.scenarios.validate import parse_case_fields

#: the Case's types and constants, defined in :mod:`scenarios.schema` and re-exported here
__all__ = ["ALWAYS_EMITTED", "CASE_VERSION", "DSV4_PAGE_ALIGN", "DSV4_TOKEN_BYTES", "EXECS",
           "FORWARD_OPS", "OPS", "POISON_BYTE", "ROW_DTYPES", "ROW_ITEMSIZE",
           "STEP_ALWAYS_EMITTED", "STEP_OPS", "Case", "CaseError", "GraphConfig", "PoolConfig", "Step",
           "field_default", "json_fields"]


@dataclass(frozen=True)
class Case:
    pool: PoolConfig = field(default_factory=PoolConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    steps: tuple[Step, ...] = ()
    payload_seed: int = 0
    kind: str = "custom"  # the scenario kind that generated it (for reports/dedup only)

    # ------------------------------------------------------------------ json
    def to_json(self) -> dict[str, Any]:
        return {
            "version": CASE_VERSION,
            "kind": self.kind,
            "pool": json_fields(self.pool, ALWAYS_EMITTED["pool"]),
            "graph": json_fields(self.graph, ALWAYS_EMITTED["graph"]),
            "payload_seed": self.payload_seed,
            "steps": [s.to_json() for s in self.steps],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(obj: Any) -> Case:
        """Parse the JSON form and check the rules every Case obeys (types, ranges, the fields
        each op takes, the resource limits: :mod:`scenarios.validate`); raises
        :class:`CaseError` naming the offending field. Each feature's own rules (the
        ``validators`` of its record) run in :func:`swafuzz.features.validation.load_case`,
        which is how the harness reads every Case it did not build itself."""
        return Case(**parse_case_fields(obj))

    @staticmethod
    def loads(text: str) -> Case:
        """:meth:`from_json` of a JSON text (``"<bundle>"`` names the error when it is not
        JSON)."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise CaseError("<bundle>", f"not valid JSON ({e})") from None
        return Case.from_json(obj)

    def summary(self) -> dict[str, int]:
        rids = set()
        for s in self.steps:
            if s.rid is not None:
                rids.add(s.rid)
            rids.update(s.rids)
        return {"requests": len(rids), "steps": len(self.steps)}
