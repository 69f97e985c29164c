"""The Case's types and constants: the pool and graph configurations, the step, the error a
malformed Case raises, and the one rule that writes a config dataclass as JSON.

:mod:`scenarios.case` builds the :class:`Case` from them and re-exports every public name here,
so ``from swafuzz.scenarios.case import PoolConfig`` keeps working; :mod:`scenarios.validate`
(the parser) and the per-feature rules (``swafuzz/features/<name>/rules.py``) import them from here, so none of
them imports the Case module back. What the fields mean: ``swafuzz/features/*/SEMANTICS.md``.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, fields
from typing import Any

CASE_VERSION = 1
POISON_BYTE = 0x5A

ROW_DTYPES = ("uint8", "bfloat16")
LAYOUTS = ("rows", "dsv4")
DSV4_TOKEN_BYTES = 584  # 448 fp8 nope + 64 bf16 rope + 7 UE8M0 scales + 1 pad
DSV4_PAGE_ALIGN = 576
ROW_ITEMSIZE = {"uint8": 1, "bfloat16": 2}
EXECS = ("eager", "graph")
#: ``Step.tail_exec`` values (empty: the late layers run eagerly)
TAIL_EXECS = ("bucket", "prefill")
OPS = (
    "admit",
    "decode",
    "verify",
    "draft_extend",
    "draft_decode",
    "idle",
    "dp_decode",
    "evict",
    "finish",
    "remap",
    "extend",
    "draft_block",
)
FORWARD_OPS = ("admit", "decode", "verify", "draft_extend", "draft_decode", "idle", "dp_decode",
               "extend", "draft_block")
#: The fields emitted in JSON even at their default: the base fields every version-1 bundle
#: carries. Every other field is emitted only when it differs from its default, so a field a
#: feature adds leaves the JSON of the Cases that do not use it byte-identical.
ALWAYS_EMITTED = {
    "pool": ("page_size", "full_pages", "swa_pages", "window", "layers", "draft_layers",
             "row_width", "row_dtype"),
    "graph": ("buckets", "topk", "num_steps", "num_draft_tokens"),
    "step": ("op",),
}
#: Step fields emitted at their default for some ops (field -> ops): the ``exec`` of a forward
#: that runs in a bucket's graph (``admit`` / ``extend`` emit it only for a prefill graph) and
#: the ``rids`` of ``dp_decode`` (an IDLE DP rank has none).
STEP_ALWAYS_EMITTED = {
    "exec": tuple(o for o in FORWARD_OPS if o not in ("admit", "extend")),
    "rids": ("dp_decode",),
}


class CaseError(ValueError):
    """A malformed Case. The message names the field (a dotted path) and what is allowed."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


def field_default(f: Field) -> Any:
    """A dataclass field's default (its factory's value), or ``MISSING`` for a required one."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def json_fields(obj: Any, always: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object of a config dataclass: its fields in declaration order, each emitted when
    it is in ``always`` or differs from its default; tuples become lists."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if f.name in always or v != field_default(f):
            out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


@dataclass(frozen=True)
class PoolConfig:
    page_size: int = 1
    full_pages: int = 8
    swa_pages: int = 8
    window: int = 4
    layers: int = 1
    draft_layers: int = 1
    row_width: int = 4
    row_dtype: str = "uint8"
    page_pad_bytes: int = 0
    layout: str = "rows"
    request_window: int = 0  # ring capacity per request slot (0: paged SWA pool)
    window_slots: int = 0  # request slots 1..window_slots (window only)
    window_chunk: int = 0  # workspace rows past (window_slots + 1) * window
    late_layer_start: int = 0  # first late (tail-only) target layer (0: no tail)
    swa_ring: int = 0  # ring rows per request slot (0: paged SWA, no ring)
    req_slots: int = 0  # request slots 1..req_slots with a ring (slot 0 is padding)
    separate_replay: int = 0  # 1: encoder replay as a separate EXTEND forward (0: fold)

    @property
    def ring_rows(self) -> int:
        """Ring rows of one SWA layer buffer, slot 0 included (0 without a ring)."""
        return (self.req_slots + 1) * self.swa_ring if self.swa_ring else 0

    @property
    def swa_buffer_pages(self) -> int:
        """Pages of one SWA layer buffer, dummy page included: ``swa_pages + 1``, or with a ring
        ``ceil(ring_rows / P)``."""
        if self.swa_ring:
            return -(-self.ring_rows // self.page_size)
        return self.swa_pages + 1

    @property
    def row_bytes(self) -> int:
        """Bytes of one slot in the pool bytes: the row (``"rows"``), the 584-byte token
        (``"dsv4"``)."""
        if self.layout == "dsv4":
            return DSV4_TOKEN_BYTES
        return self.row_width * ROW_ITEMSIZE[self.row_dtype]

    @property
    def k_row_bytes(self) -> int:
        """Bytes of one K row handed to the store (``row_width`` of ``row_dtype``)."""
        return self.row_width * ROW_ITEMSIZE[self.row_dtype]

    @property
    def page_stride_bytes(self) -> int:
        """Bytes from one SWA page to the next: ``P * row_bytes + page_pad_bytes``; layout
        ``"dsv4"``: ``ceil(584 * P / 576) * 576``."""
        if self.layout == "dsv4":
            return -(-DSV4_TOKEN_BYTES * self.page_size // DSV4_PAGE_ALIGN) * DSV4_PAGE_ALIGN
        return self.page_size * self.row_bytes + self.page_pad_bytes

    @property
    def pad_bytes_per_page(self) -> int:
        """Canary bytes after each page's slots: ``page_stride_bytes - P * row_bytes``."""
        return self.page_stride_bytes - self.page_size * self.row_bytes

    @property
    def mapping_len(self) -> int:
        return self.full_pages * self.page_size + self.page_size + 1

    @property
    def swa_slots(self) -> int:
        """Slots (ring: rows) per SWA layer buffer, dummy page included."""
        return self.swa_buffer_pages * self.page_size


@dataclass(frozen=True)
class GraphConfig:
    buckets: tuple[int, ...] = (1, 2, 4, 8)
    topk: int = 0
    num_steps: int = 1
    num_draft_tokens: int = 1
    prep_in_graph: bool = False
    draft_extend_buffer: bool = False
    prefill_buckets: tuple[int, ...] = ()  # breakable prefill graph token buckets (issue 12)
    tail_buckets: tuple[int, ...] = ()  # row buckets of the late-layer tail graphs
    tail_capacity: int = 0  # rows of the prefill-graph tail's location buffer (0: none)

    def bucket_for(self, n: int) -> int | None:
        for b in self.buckets:
            if b >= n:
                return b
        return None


@dataclass(frozen=True)
class Step:
    op: str
    rid: int | None = None
    length: int | None = None
    rids: tuple[int, ...] = ()
    accept: tuple[int, ...] = ()
    tokens: int | None = None
    rank_tokens: tuple[int, ...] = ()
    exec: str = "eager"
    dp_extend: bool = False
    prefix_rid: int | None = None  # admit: radix-cache prefix hit on this live request
    prefix_len: int | None = None  # admit: shared leading tokens of prefix_rid
    lengths: tuple[int, ...] = ()
    replay: tuple[int, ...] = ()
    tail_exec: str = ""  # late layers: "" eager, "bucket" row-bucket graph, "prefill" graph

    def to_json(self) -> dict[str, Any]:
        always = ALWAYS_EMITTED["step"] + tuple(
            k for k, ops in STEP_ALWAYS_EMITTED.items() if self.op in ops)
        return json_fields(self, always)
