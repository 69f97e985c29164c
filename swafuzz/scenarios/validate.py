"""Parse a Case from JSON-like data and check the rules every Case obeys; every error is a
:class:`CaseError` naming the dotted field and what is allowed.

Common rules: each field's type and range (a feature's by its ``CaseField`` declarations:
:func:`parse_declared`), the fields each op takes, a step's shape (request ids, one ``accept`` /
``lengths`` per request, ``replay`` from ``rids``, 1..7 DP ranks) and one Case's resource budget.
Rules tying a feature's fields to the rest are its ``validators`` (``features/<name>/rules.py``,
via :func:`swafuzz.features.validation.validate_case`); feasibility is the oracle's
(``oracles.engine.expect`` raises ``CaseInfeasible``).
"""

from __future__ import annotations

from typing import Any

from swafuzz import features
from swafuzz.features.case_field import CaseField
from swafuzz.scenarios.schema import (
    CASE_VERSION,
    DECLARED,
    EXECS,
    OPS,
    ROW_DTYPES,
    STEP_OPS,
    CaseError,
    GraphConfig,
    PoolConfig,
    Step,
    declaration,
)

MAX_PAGE_SIZE = 256
MAX_ID = 2**31 - 1

# Resource budget of one Case (checked here, before anything is allocated): a bundle asking for
# more is an input error naming the field and the limit, not an out-of-memory kill.
MAX_MAPPING_ENTRIES = 2**27  # full->SWA mapping M: (full_pages + 1) * page_size + 1 int64 (1 GiB)
# All SWA buffers, target and draft layers: 5 GiB, so one target layer and one draft layer of
# just over 2^31 bytes each (the > 2^31-byte address tier, tests/features/big_layer/test_big_layer.py) fit;
# 4 GiB could not hold two such layers (draft_layers >= 1).
MAX_POOL_BYTES = 5 * 2**30
MAX_STEPS = 10_000
MAX_TOKENS = 2**16  # rows of one forward / one request's length

#: the pool's page size, parsed by the one page-size rule of both levels (a power of two:
#: :func:`parse_declared`; the server level's ``config.page_size`` declares a lower ``hi``)
PAGE_SIZE = CaseField("pool", "page_size", "int", 1, "tokens per page", lo=1, hi=MAX_PAGE_SIZE,
                      pow2=True)
#: the base fields each op takes; the features' step fields add theirs (``CaseField.ops``)
_BASE_STEP_FIELDS = {
    "admit": {"rid", "length", "exec"}, "idle": {"tokens", "exec"}, "evict": {"rid"},
    "finish": {"rid"}, **{op: {"rids", "exec"} for op in (
        "decode", "verify", "draft_extend", "draft_decode", "extend", "draft_block")},
    **{op: set(d.fields) for op, d in STEP_OPS.items()},
}
_STEP_FIELDS = {op: names | {d.name for d in DECLARED["step"] if op in d.ops}
                for op, names in _BASE_STEP_FIELDS.items()}


def int_field(obj: dict, key: str, path: str, lo: int, hi: int | None = None,
              default=None) -> int:
    if key not in obj:
        if default is not None:
            return default
        raise CaseError(f"{path}.{key}", "is required")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise CaseError(f"{path}.{key}", f"must be an integer (got {v!r})")
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise CaseError(f"{path}.{key}", f"must be {rng} (got {v})")
    return v


def _int_list(obj: dict, key: str, path: str, lo: int, hi: int | None = None) -> tuple[int, ...]:
    v = obj.get(key, [])
    if not isinstance(v, list):
        raise CaseError(f"{path}.{key}", f"must be a list of integers (got {v!r})")
    return tuple(int_field({"x": x}, "x", f"{path}.{key}[{i}]", lo, hi) for i, x in enumerate(v))


def object_fields(obj: Any, path: str, allowed: set[str]) -> dict:
    if not isinstance(obj, dict):
        raise CaseError(path, f"must be an object (got {type(obj).__name__})")
    extra = set(obj) - allowed
    if extra:
        raise CaseError(
            f"{path}.{sorted(extra)[0]}", f"unknown field; allowed: {', '.join(sorted(allowed))}"
        )
    return obj


def parse_pool(obj: Any) -> PoolConfig:
    d = object_fields(obj, "pool", set(PoolConfig.__dataclass_fields__))
    p = parse_declared(d, "pool", PAGE_SIZE)
    dtype = d.get("row_dtype", "uint8")
    if dtype not in ROW_DTYPES:
        raise CaseError("pool.row_dtype", f"must be one of {', '.join(ROW_DTYPES)} (got {dtype!r})")
    pool = PoolConfig(
        page_size=p,
        full_pages=int_field(d, "full_pages", "pool", 1, MAX_ID // p - 1),
        swa_pages=int_field(d, "swa_pages", "pool", 1, MAX_ID // p - 1),
        window=int_field(d, "window", "pool", 1),
        layers=int_field(d, "layers", "pool", 1, 64),
        draft_layers=int_field(d, "draft_layers", "pool", 1, 64, default=1),
        row_width=int_field(d, "row_width", "pool", 1, 4096),
        row_dtype=dtype,
        **_declared(d, "pool", DECLARED["pool"]),
    )
    entries = (pool.full_pages + 1) * p + 1
    if entries > MAX_MAPPING_ENTRIES:
        raise CaseError("pool.full_pages", f"(full_pages + 1) * page_size = {entries - 1} mapping "
                        f"entries is over the resource limit of {MAX_MAPPING_ENTRIES}")
    total = pool.swa_buffer_pages * pool.page_stride_bytes * (pool.layers + pool.draft_layers)
    if total > MAX_POOL_BYTES:
        raise CaseError("pool.swa_pages", f"the SWA buffers would take {total} bytes "
                        f"((swa_pages + 1) * page stride * (layers + draft_layers)); "
                        f"the resource limit is {MAX_POOL_BYTES}")
    return pool


def _declared(obj: dict, path: str, decls: tuple[CaseField, ...]) -> dict[str, Any]:
    """The declared feature fields ``obj`` sets, parsed by their declarations (type, range,
    allowed values), as keyword arguments; a field ``obj`` leaves out keeps its default."""
    return {d.name: parse_declared(obj, path, d) for d in decls if d.name in obj}


def parse_object(obj: Any, path: str, where: str, cls: type) -> Any:
    """A ``cls`` (a dataclass all of whose fields are declared: the server level's) from the
    JSON object ``obj`` at ``path``: unknown fields refused, each field it sets parsed by its
    declaration, the others at their default."""
    d = object_fields(obj, path, set(cls.__dataclass_fields__))
    return cls(**_declared(d, path, DECLARED[where]))


def parse_declared(obj: dict, path: str, d: CaseField) -> Any:
    """Field ``d`` of ``obj`` (at ``path``) parsed by its declaration; raises :class:`CaseError`
    naming ``path.name`` and what is allowed."""
    v, where, null = obj.get(d.name), f"{path}.{d.name}", d.type.endswith("| None")
    if v is None and null and d.level == "server":
        return None
    if d.type == "bool":
        if not isinstance(v, bool):
            raise CaseError(where, f"must be true or false (got {v!r})")
        return v
    if d.type.startswith("str"):
        if v not in d.choices:
            allowed = ("null",) * (null and d.level == "server") + d.choices
            raise CaseError(where, f"must be one of {', '.join(allowed)} (got {v!r})")
        return v
    if d.type.startswith("tuple[tuple"):  # environment variables: names -> decimal strings
        for name, x in object_fields(v, where, set(d.choices)).items():
            if not (isinstance(x, str) and x.isascii() and x.isdigit() and d.lo <= int(x) <= d.hi):
                raise CaseError(f"{where}.{name}", f"must be a decimal integer in [{d.lo}, "
                                f"{d.hi}] as a string (got {x!r})")
        return tuple(sorted(v.items()))
    if d.type in ("int", "int | None"):
        if d.span and (isinstance(v, bool) or not isinstance(v, int) or not d.lo <= v <= d.hi):
            raise CaseError(where, f"must be an int in {d.lo}..{d.hi} (got {v!r})")
        v = int_field(obj, d.name, path, d.lo, d.hi)
        if d.pow2 and v & (v - 1):
            raise CaseError(where, f"must be a power of two in [{d.lo}, {d.hi}] (got {v})")
        return v
    if d.span:
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          or not d.lo <= x <= d.hi for x in v):
            raise CaseError(where, f"must be a list of ints in {d.lo}..{d.hi} (got {v!r})")
        out = tuple(v)
    else:
        out = _int_list(obj, d.name, path, d.lo, d.hi)
    if null and not out:
        raise CaseError(where, "must be null or a non-empty list (got [])")
    if d.increasing and any(a >= b for a, b in zip(out, out[1:])):
        raise CaseError(where, f"must be strictly increasing (got {list(out)})")
    return out


def parse_graph(obj: Any) -> GraphConfig:
    d = object_fields(obj, "graph", set(GraphConfig.__dataclass_fields__))
    buckets = _int_list(d, "buckets", "graph", 1, 4096)
    if not buckets:
        raise CaseError("graph.buckets", "must list at least one captured batch size")
    if any(b >= c for b, c in zip(buckets, buckets[1:])):
        raise CaseError("graph.buckets", f"must be strictly increasing (got {list(buckets)})")
    return GraphConfig(
        buckets=buckets,
        topk=int_field(d, "topk", "graph", 0, 16, default=0),
        num_steps=int_field(d, "num_steps", "graph", 1, 16, default=1),
        num_draft_tokens=int_field(d, "num_draft_tokens", "graph", 1, 64, default=1),
        **_declared(d, "graph", DECLARED["graph"]),
    )


def parse_step(obj: Any, i: int) -> Step:
    path = f"steps[{i}]"
    if not isinstance(obj, dict):
        raise CaseError(path, f"must be an object (got {type(obj).__name__})")
    op = obj.get("op")
    if op not in OPS:
        raise CaseError(f"{path}.op", f"must be one of {', '.join(OPS)} (got {op!r})")
    object_fields(obj, path, _STEP_FIELDS[op] | {"op"})
    kw: dict[str, Any] = {"op": op}
    if "exec" in _STEP_FIELDS[op]:
        ex = obj.get("exec", "eager")
        if ex not in EXECS:
            raise CaseError(f"{path}.exec", f"must be one of {', '.join(EXECS)} (got {ex!r})")
        kw["exec"] = ex
    declared = STEP_OPS[op].fields if op in STEP_OPS else ()
    if op in ("admit", "evict", "finish") or "rid" in declared:
        kw["rid"] = int_field(obj, "rid", path, 0)
    if op == "admit" or "length" in declared:
        kw["length"] = int_field(obj, "length", path, 1, MAX_TOKENS)
    if "rids" in _STEP_FIELDS[op]:
        rids = _int_list(obj, "rids", path, 0)
        if len(rids) > MAX_TOKENS:
            raise CaseError(f"{path}.rids", f"at most {MAX_TOKENS} requests (got {len(rids)})")
        if len(set(rids)) != len(rids):
            raise CaseError(f"{path}.rids", f"must not repeat a request id (got {list(rids)})")
        if not rids and not (op in STEP_OPS and STEP_OPS[op].empty_rids):
            raise CaseError(f"{path}.rids", "must name at least one request")
        kw["rids"] = rids
    if op == "idle":
        kw["tokens"] = int_field(obj, "tokens", path, 1, MAX_TOKENS)
    kw.update(_declared(obj, path, tuple(d for d in DECLARED["step"] if op in d.ops)))
    _step_shape(obj, path, kw)
    return Step(**kw)


def _step_shape(obj: dict, path: str, kw: dict[str, Any]) -> None:
    """The shape of a step beyond each field's own type and range: one ``accept`` / ``lengths``
    entry per request, ``replay`` drawn from ``rids``, then each feature's shape rules (hook
    ``scenario.step_shape``). A field the step leaves out counts as its default."""
    op = kw["op"]

    def get(name: str) -> Any:
        return kw[name] if name in kw else declaration("step", name).default

    if op == "draft_extend" or (op == "verify" and "accept" in obj):
        if len(get("accept")) != len(kw["rids"]):
            raise CaseError(f"{path}.accept", "must have one entry per request in rids")
    if op == "extend":
        if len(get("lengths")) != len(kw["rids"]):
            raise CaseError(f"{path}.lengths", "must have one entry (>= 1) per request in rids")
        replay = get("replay")
        if not set(replay) <= set(kw["rids"]) or len(set(replay)) != len(replay):
            raise CaseError(f"{path}.replay", "must list distinct request ids from rids (got "
                            f"{list(replay)})")
    for part in features.parts("scenario"):  # e.g. DP: how many other ranks
        part.step_shape(obj, path, kw, get)


def parse_header(d: dict) -> str:
    """The ``version`` check of a Case object of either level, and its ``kind``."""
    version = d.get("version", CASE_VERSION)
    if version != CASE_VERSION:
        raise CaseError("case.version", f"must be {CASE_VERSION} (got {version!r})")
    kind = d.get("kind", "custom")
    if not isinstance(kind, str):
        raise CaseError("case.kind", f"must be a string (got {kind!r})")
    return kind


def parse_case_fields(obj: Any) -> dict[str, Any]:
    """The keyword arguments of the :class:`~scenarios.case.Case` the JSON object describes
    (``Case.from_json`` builds it), after the common rules."""
    d = object_fields(obj, "case", {"version", "kind", "pool", "graph", "payload_seed", "steps"})
    kind = parse_header(d)
    steps = d.get("steps")
    if not isinstance(steps, list):
        raise CaseError("case.steps", "must be a list of step objects")
    if len(steps) > MAX_STEPS:
        raise CaseError("case.steps", f"at most {MAX_STEPS} steps (got {len(steps)})")
    return {
        "pool": parse_pool(d.get("pool", {})),
        "graph": parse_graph(d.get("graph", {"buckets": [1, 2, 4, 8]})),
        "steps": tuple(parse_step(s, i) for i, s in enumerate(steps)),
        "payload_seed": int_field(d, "payload_seed", "case", 0, 2**63 - 1, default=0),
        "kind": kind,
    }
