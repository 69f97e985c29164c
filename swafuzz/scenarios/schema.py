"""The Case's types and constants: pool and graph configurations, the step, the error a malformed
Case raises, and the one rule writing a config dataclass as JSON.

``PoolConfig``, ``GraphConfig`` and ``Step`` are frozen dataclasses assembled from the dense base
fields (:data:`BASE_FIELDS`) plus each feature's declared ``CaseField`` s (its record's
``fields``), over base classes (:class:`PoolMethods`, ...) holding what they derive.
:mod:`scenarios.case` re-exports them; the parser and feature rules import them from here, so none
imports the Case module back. Meanings: ``swafuzz/features/*/SEMANTICS.md``.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, field, fields, make_dataclass
from typing import Any

from swafuzz import features
from swafuzz.features.case_field import WHERE, CaseField
from swafuzz.features.record import place_after
from swafuzz.features.step_op import StepOp

CASE_VERSION = 1
POISON_BYTE = 0x5A

ROW_DTYPES = ("uint8", "bfloat16")
DSV4_TOKEN_BYTES = 584  # 448 fp8 nope + 64 bf16 rope + 7 UE8M0 scales + 1 pad
DSV4_PAGE_ALIGN = 576
ROW_ITEMSIZE = {"uint8": 1, "bfloat16": 2}
EXECS = ("eager", "graph")
#: the dense base ops; the features add theirs (hook ``scenario.step_ops``: :data:`STEP_OPS`)
BASE_OPS = ("admit", "decode", "verify", "draft_extend", "draft_decode", "idle", "evict", "finish",
            "extend", "draft_block")
#: the base ops that run forwards
BASE_FORWARD_OPS = ("admit", "decode", "verify", "draft_extend", "draft_decode", "idle", "extend",
                    "draft_block")


def _step_ops() -> tuple[dict[str, StepOp], tuple[str, ...]]:
    """The features' op declarations by name, and every op in order: the base ones, each
    declared op moved to follow the op its ``after`` names."""
    decls = [d for ops in features.hooks("scenario.step_ops") for d in ops]
    byname: dict[str, StepOp] = {}
    for d in decls:
        if not isinstance(d, StepOp) or d.problem():
            raise features.RecordError(f"step op declaration {d!r}: "
                                       f"{d.problem() if isinstance(d, StepOp) else 'no StepOp'}")
        if d.name in BASE_OPS or d.name in byname:
            raise features.RecordError(f"step op {d.name!r} is declared twice")
        byname[d.name] = d
    order = place_after(BASE_OPS, decls, _name,
                        lambda d: f"step op {d.name}: after {d.after!r}, which is no op")
    return byname, tuple(map(_name, order))


def _name(x: str | StepOp | CaseField) -> str:
    return x if isinstance(x, str) else x.name


#: the step ops the features declare (name -> :class:`~swafuzz.features.step_op.StepOp`)
STEP_OPS, OPS = _step_ops()
FORWARD_OPS = tuple(o for o in OPS if o in BASE_FORWARD_OPS
                    or (o in STEP_OPS and STEP_OPS[o].forward))
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
#: that runs in a bucket's graph (``admit`` / ``extend`` emit it only for a prefill graph), and
#: what a declared op's ``emit`` names (an op whose ``rids`` may be empty emits them).
STEP_ALWAYS_EMITTED = {
    "exec": tuple(o for o in FORWARD_OPS if o not in ("admit", "extend")),
    **{f: tuple(d.name for d in STEP_OPS.values() if f in d.emit)
       for f in sorted({f for d in STEP_OPS.values() for f in d.emit})},
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


class PoolMethods:
    """What a pool configuration derives from its fields (the base of :data:`PoolConfig`)."""

    __slots__ = ()

    @property
    def swa_buffer_pages(self) -> int:
        """Pages of one SWA layer buffer, dummy page included: ``swa_pages + 1``, or what a
        feature's ``ScenarioPart.swa_buffer_pages`` answers for the pool (the first that does,
        in feature order)."""
        got = features.first("scenario", "swa_buffer_pages", self)
        return self.swa_pages + 1 if got is None else got

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


class GraphMethods:
    """What a graph configuration derives from its fields (the base of :data:`GraphConfig`)."""

    __slots__ = ()

    def bucket_for(self, n: int) -> int | None:
        return next((b for b in self.buckets if b >= n), None)


class StepMethods:
    """What a step derives from its fields (the base of :data:`Step`)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        always = ALWAYS_EMITTED["step"] + tuple(
            k for k, ops in STEP_ALWAYS_EMITTED.items() if self.op in ops)
        return json_fields(self, always)


#: The dense base fields every Case has, per dataclass (name, type, default; ``MISSING``: none).
#: Each feature adds its own (its record's ``fields``, a ``fields.py`` beside the record).
BASE_FIELDS: dict[str, tuple[tuple[str, str, Any], ...]] = {
    "pool": (("page_size", "int", 1), ("full_pages", "int", 8), ("swa_pages", "int", 8),
             ("window", "int", 4), ("layers", "int", 1), ("draft_layers", "int", 1),
             ("row_width", "int", 4), ("row_dtype", "str", "uint8")),
    "graph": (("buckets", "tuple[int, ...]", (1, 2, 4, 8)), ("topk", "int", 0),
              ("num_steps", "int", 1), ("num_draft_tokens", "int", 1)),
    "step": (("op", "str", MISSING), ("rid", "int | None", None), ("length", "int | None", None),
             ("rids", "tuple[int, ...]", ()), ("tokens", "int | None", None),
             ("exec", "str", "eager")),
}


def _field_order() -> dict[str, tuple[str | CaseField, ...]]:
    """Per dataclass (:data:`~swafuzz.features.case_field.WHERE`, both levels), its fields in
    order: the base ones (names; the server level has none), then every feature's declarations
    in registry order, each declaration with an ``after`` moved to follow the field it names."""
    decls = [d for f in features.all_features() for d in f.field_decls()]
    for d in decls:
        if d.problem():
            raise features.RecordError(f"field declaration {d.problem()}")
    out: dict[str, tuple[str | CaseField, ...]] = {}
    for where in WHERE:
        base = BASE_FIELDS.get(where, ())
        mine = [d for d in decls if d.where == where]
        order = [name for name, _, _ in base] + [d for d in mine if not d.after]
        out[where] = tuple(place_after(
            order, [d for d in mine if d.after], _name,
            lambda d, w=where: f"{w}.{d.name}: after {d.after!r}, which is no {w} field"))
    return out


_ORDER = _field_order()
#: the features' field declarations per dataclass (``"pool"``, ..., ``"request"``), in order
DECLARED = {w: tuple(x for x in order if isinstance(x, CaseField)) for w, order in _ORDER.items()}


def declaration(where: str, name: str) -> CaseField | None:
    """The feature declaration of field ``where.name``, or None for a base field."""
    return next((d for d in DECLARED[where] if d.name == name), None)


def assemble(where: str, name: str, methods: type, doc: str, module: str = __name__) -> type:
    """The frozen dataclass ``name`` (defined in ``module``, where pickling finds it): the base
    fields of ``where`` and the features' declared ones, in :func:`_field_order`, with
    ``methods`` as its base class."""
    base = {n: (t, d) for n, t, d in BASE_FIELDS.get(where, ())}
    specs = []
    for x in _ORDER[where]:
        n, (t, d) = (x, base[x]) if isinstance(x, str) else (x.name, (x.type, x.default))
        specs.append((n, t) if d is MISSING else (n, t, field(default=d)))
    cls = make_dataclass(name, specs, bases=(methods,), frozen=True)
    cls.__module__ = module  # make_dataclass names ``types``
    cls.__doc__ = doc + " Feature fields: " + "; ".join(
        f"``{d.name}`` ({d.doc})" for d in DECLARED[where]) + "."
    return cls


PoolConfig = assemble("pool", "PoolConfig", PoolMethods,
                      "The SWA pool: pages, window, layers, row shape.")
GraphConfig = assemble("graph", "GraphConfig", GraphMethods,
                       "The captured graphs and the speculative configuration.")
Step = assemble("step", "Step", StepMethods, "One step of a Case: an op and its operands.")
