"""The server-level Case: the server arguments that shape the SWA path, the model/pool shape
swafuzz needs, and a request timeline. Plain data, JSON round trip, validated field by field.

:class:`ServerConfig`'s field names are the release's ``ServerArgs`` field names (0.5.23:
``sglang/srt/arg_groups/fields/*.py``), so a config is handed to the release's own argument
checks as it is (:func:`swafuzz.server.run.release_refusal`). :class:`ModelShape` holds what a
server reads from the checkpoint or derives from its memory budget (layers, sliding window, pool
sizes, row width): not ``ServerArgs`` fields.

A :class:`Request` arrives at a scheduling step with a prompt (``prompt_len`` tokens, the first
``prefix_len`` of them shared by every request of its ``prefix_group``), generates up to
``max_new_tokens`` tokens, may be aborted at ``abort_step``, and with speculative decoding
accepts ``accept_lengths[i]`` tokens at its i-th decode step. ``rank``: its DP rank.

Bad input raises :class:`ServerCaseError` naming the JSON path and the allowed values (the CLI
exits 2 with it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SERVER_CASE_VERSION = 1
SPECULATIVE_ALGORITHMS = (None, "EAGLE", "EAGLE3", "NEXTN")
MAX_REQUESTS = 16
MAX_PROMPT = 512
MAX_NEW_TOKENS = 64
MAX_STEPS = 256
ROW_BYTES = (8, 16, 32, 64)
PAGE_SIZES = (1, 2, 4, 8, 16, 32, 64)
#: the MoE all-to-all backends a server can name (0.5.23's ``moe_a2a_backend`` choices; null:
#: the release's default, none); the installed release's own choices are checked again there
MOE_A2A_BACKENDS = (None, "none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep",
                    "flashinfer", "megamoe", "deepep_v2", "ascend_tp", "pplx",
                    "flashinfer_megamoe")
#: the deployment's environment variables a Case may set (the release reads these limits from
#: its environment, not from ServerArgs): name -> what the value must be
ENV_VARS = {"SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "a decimal integer 1..1048576"}
#: the fields added after the first draws: left out of the JSON and of ``server_args()`` while
#: they hold their default (a Case without them serialises as before)
LATE_FIELDS = ("moe_a2a_backend", "disable_prefill_cuda_graph", "env")


class ServerCaseError(ValueError):
    """A server-level Case the harness refuses: the message names the field and the rule."""


@dataclass(frozen=True)
class ServerConfig:
    """Server arguments, under the release's ``ServerArgs`` names."""

    tp_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    moe_dense_tp_size: int | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    page_size: int = 1
    cuda_graph_bs_decode: tuple[int, ...] | None = None
    disable_cuda_graph: bool = True
    chunked_prefill_size: int | None = None
    disable_radix_cache: bool = True
    enable_encoder_swa_bounded_replay: bool = False
    enable_decoder_swa_bounded_replay: bool = False
    moe_a2a_backend: str | None = None
    disable_prefill_cuda_graph: bool = False
    #: the deployment's environment (:data:`ENV_VARS`), as sorted ``(name, value)`` pairs; not a
    #: ServerArgs field: handed to the release's checks and ranks beside ``server_args()``
    env: tuple[tuple[str, str], ...] = ()

    def attn_tp_size(self) -> int:
        """The attention-TP ranks that hold each batch: ``tp_size``, over ``dp_size`` with
        data-parallel attention (the release's rule)."""
        return self.tp_size // self.dp_size if self.enable_dp_attention else self.tp_size

    def server_args(self) -> dict[str, Any]:
        """The ``ServerArgs`` keyword arguments this config sets (lists for tuples; the late
        fields only when set, ``env`` never: :meth:`env_dict`)."""
        out = asdict(self)
        if out["cuda_graph_bs_decode"] is not None:
            out["cuda_graph_bs_decode"] = list(out["cuda_graph_bs_decode"])
        base = ServerConfig()
        for name in LATE_FIELDS:
            if name == "env" or out[name] == getattr(base, name):
                del out[name]
        return out

    def env_dict(self) -> dict[str, str]:
        """The deployment's environment variables this config sets."""
        return dict(self.env)

    def to_json(self) -> dict[str, Any]:
        """``server_args()`` plus ``env`` (as an object) when set."""
        out = self.server_args()
        if self.env:
            out["env"] = self.env_dict()
        return out


@dataclass(frozen=True)
class ModelShape:
    """What the server reads from the checkpoint, its memory budget or its environment (not
    ServerArgs)."""

    layers: int = 2
    sliding_window: int = 4
    full_tokens: int = 256
    swa_tokens: int = 128
    row_bytes: int = 16
    #: the server's environment setting SGLANG_SWA_EVICTION_INTERVAL (0.5.23 default 128): out
    #: of window SWA tokens are freed once this many have slid out
    swa_eviction_interval: int = 128
    #: the first layer the late-layer tail runs (the checkpoint's; with
    #: enable_decoder_swa_bounded_replay, 1..layers-1); 0: none (left out of the JSON)
    late_layer_start: int = 0


@dataclass(frozen=True)
class Request:
    arrive_step: int = 0
    prompt_len: int = 4
    prefix_group: int | None = None
    prefix_len: int = 0
    max_new_tokens: int = 2
    abort_step: int | None = None
    accept_lengths: tuple[int, ...] = ()
    rank: int = 0


@dataclass(frozen=True)
class ServerCase:
    config: ServerConfig = field(default_factory=ServerConfig)
    model: ModelShape = field(default_factory=ModelShape)
    requests: tuple[Request, ...] = ()
    payload_seed: int = 0
    kind: str = "custom"

    def to_json(self) -> dict[str, Any]:
        return {"version": SERVER_CASE_VERSION, "level": "server", "kind": self.kind,
                "payload_seed": self.payload_seed, "config": self.config.to_json(),
                "model": {k: v for k, v in asdict(self.model).items()
                          if k != "late_layer_start" or v},
                "requests": [dict(asdict(r), accept_lengths=list(r.accept_lengths))
                             for r in self.requests]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(obj: Any) -> ServerCase:
        """Parse and validate (:func:`validate`); raises :class:`ServerCaseError`."""
        return parse(obj)


# ----------------------------------------------------------------------------- parsing
def _fail(path: str, rule: str) -> None:
    raise ServerCaseError(f"server case: {path}: {rule}")


def _int(path: str, v: Any, lo: int, hi: int, none: bool = False) -> int | None:
    if v is None and none:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _fail(path, f"an integer in {lo}..{hi}{' or null' if none else ''} expected, got {v!r}")
    return v


def _bool(path: str, v: Any) -> bool:
    if not isinstance(v, bool):
        _fail(path, f"true or false expected, got {v!r}")
    return v


def _section(path: str, obj: Any, cls) -> dict[str, Any]:
    if not isinstance(obj, dict):
        _fail(path, f"an object expected, got {type(obj).__name__}")
    known = [f.name for f in fields(cls)]
    extra = sorted(set(obj) - set(known))
    if extra:
        _fail(f"{path}.{extra[0]}", f"unknown field (allowed: {', '.join(known)})")
    return obj


def _config(obj: Any) -> ServerConfig:
    d = dict(_section("config", obj, ServerConfig))
    base = ServerConfig()
    get = lambda k: d.get(k, getattr(base, k))  # noqa: E731
    algo = get("speculative_algorithm")
    if algo not in SPECULATIVE_ALGORITHMS:
        _fail("config.speculative_algorithm", f"one of {', '.join(map(str, SPECULATIVE_ALGORITHMS))}"
              f" expected, got {algo!r}")
    bs = get("cuda_graph_bs_decode")
    if bs is not None:
        if not isinstance(bs, (list, tuple)) or not bs:
            _fail("config.cuda_graph_bs_decode", f"a non-empty list of batch sizes or null, got {bs!r}")
        bs = tuple(_int(f"config.cuda_graph_bs_decode[{i}]", b, 1, MAX_REQUESTS) for i, b in enumerate(bs))
        if list(bs) != sorted(set(bs)):
            _fail("config.cuda_graph_bs_decode", f"strictly increasing batch sizes expected, got {list(bs)}")
    moe = get("moe_a2a_backend")
    if moe not in MOE_A2A_BACKENDS:
        _fail("config.moe_a2a_backend", f"one of {', '.join(map(str, MOE_A2A_BACKENDS))} "
              f"expected, got {moe!r}")
    page = _int("config.page_size", get("page_size"), 1, max(PAGE_SIZES))
    if page not in PAGE_SIZES:
        _fail("config.page_size", f"one of {', '.join(map(str, PAGE_SIZES))} expected, got {page}")
    return ServerConfig(
        tp_size=_int("config.tp_size", get("tp_size"), 1, 8),
        dp_size=_int("config.dp_size", get("dp_size"), 1, 8),
        enable_dp_attention=_bool("config.enable_dp_attention", get("enable_dp_attention")),
        moe_dense_tp_size=_int("config.moe_dense_tp_size", get("moe_dense_tp_size"), 1, 8,
                               none=True),
        speculative_algorithm=algo,
        speculative_num_steps=_int("config.speculative_num_steps",
                                   get("speculative_num_steps"), 1, 8, none=True),
        speculative_eagle_topk=_int("config.speculative_eagle_topk",
                                    get("speculative_eagle_topk"), 1, 8, none=True),
        speculative_num_draft_tokens=_int("config.speculative_num_draft_tokens",
                                          get("speculative_num_draft_tokens"), 1, 16, none=True),
        page_size=page, cuda_graph_bs_decode=bs,
        disable_cuda_graph=_bool("config.disable_cuda_graph", get("disable_cuda_graph")),
        chunked_prefill_size=_int("config.chunked_prefill_size", get("chunked_prefill_size"),
                                  1, 1 << 20, none=True),
        disable_radix_cache=_bool("config.disable_radix_cache", get("disable_radix_cache")),
        enable_encoder_swa_bounded_replay=_bool("config.enable_encoder_swa_bounded_replay",
                                                get("enable_encoder_swa_bounded_replay")),
        enable_decoder_swa_bounded_replay=_bool("config.enable_decoder_swa_bounded_replay",
                                                get("enable_decoder_swa_bounded_replay")),
        moe_a2a_backend=moe,
        disable_prefill_cuda_graph=_bool("config.disable_prefill_cuda_graph",
                                         get("disable_prefill_cuda_graph")),
        env=_env(get("env")))


def _env(obj: Any) -> tuple[tuple[str, str], ...]:
    """``config.env``: an object of :data:`ENV_VARS` names to decimal strings."""
    if isinstance(obj, tuple):  # the dataclass's own form (pairs)
        obj = dict(obj)
    if not isinstance(obj, dict):
        _fail("config.env", f"an object of environment variables expected, got {obj!r}")
    for name, value in obj.items():
        if name not in ENV_VARS:
            _fail(f"config.env.{name}", f"not a deployment variable swafuzz sets (allowed: "
                  f"{', '.join(ENV_VARS)})")
        if not (isinstance(value, str) and value.isdigit() and 1 <= int(value) <= 1 << 20):
            _fail(f"config.env.{name}", f"{ENV_VARS[name]} as a string expected, got {value!r}")
    return tuple(sorted(obj.items()))


def _model(obj: Any) -> ModelShape:
    d = dict(_section("model", obj, ModelShape))
    base = ModelShape()
    get = lambda k: d.get(k, getattr(base, k))  # noqa: E731
    m = ModelShape(layers=_int("model.layers", get("layers"), 1, 8),
                   sliding_window=_int("model.sliding_window", get("sliding_window"), 1, 4096),
                   full_tokens=_int("model.full_tokens", get("full_tokens"), 1, 1 << 16),
                   swa_tokens=_int("model.swa_tokens", get("swa_tokens"), 1, 1 << 16),
                   row_bytes=_int("model.row_bytes", get("row_bytes"), 1, 64),
                   swa_eviction_interval=_int("model.swa_eviction_interval",
                                              get("swa_eviction_interval"), 1, 1 << 16),
                   late_layer_start=_int("model.late_layer_start", get("late_layer_start"), 0, 7))
    if m.row_bytes not in ROW_BYTES:
        _fail("model.row_bytes", f"one of {', '.join(map(str, ROW_BYTES))} expected, got "
              f"{m.row_bytes}")
    return m


def _request(i: int, obj: Any) -> Request:
    p = f"requests[{i}]"
    d = dict(_section(p, obj, Request))
    base = Request()
    get = lambda k: d.get(k, getattr(base, k))  # noqa: E731
    acc = get("accept_lengths")
    if not isinstance(acc, (list, tuple)):
        _fail(f"{p}.accept_lengths", f"a list of integers expected, got {acc!r}")
    r = Request(
        arrive_step=_int(f"{p}.arrive_step", get("arrive_step"), 0, MAX_STEPS),
        prompt_len=_int(f"{p}.prompt_len", get("prompt_len"), 1, MAX_PROMPT),
        prefix_group=_int(f"{p}.prefix_group", get("prefix_group"), 0, MAX_REQUESTS, none=True),
        prefix_len=_int(f"{p}.prefix_len", get("prefix_len"), 0, MAX_PROMPT),
        max_new_tokens=_int(f"{p}.max_new_tokens", get("max_new_tokens"), 1, MAX_NEW_TOKENS),
        abort_step=_int(f"{p}.abort_step", get("abort_step"), 0, MAX_STEPS, none=True),
        accept_lengths=tuple(_int(f"{p}.accept_lengths[{k}]", a, 1, 16)
                             for k, a in enumerate(acc)),
        rank=_int(f"{p}.rank", get("rank"), 0, 7))
    if r.prefix_len >= r.prompt_len:
        _fail(f"{p}.prefix_len", f"below prompt_len ({r.prompt_len}) expected, got {r.prefix_len}")
    if r.prefix_len and r.prefix_group is None:
        _fail(f"{p}.prefix_len", "a shared prefix needs a prefix_group")
    return r


def parse(obj: Any) -> ServerCase:
    """A :class:`ServerCase` from its JSON form, every field checked (:func:`validate`)."""
    if not isinstance(obj, dict):
        _fail("(top)", f"an object expected, got {type(obj).__name__}")
    allowed = ("version", "level", "kind", "payload_seed", "config", "model", "requests")
    extra = sorted(set(obj) - set(allowed))
    if extra:
        _fail(extra[0], f"unknown field (allowed: {', '.join(allowed)})")
    if obj.get("version", SERVER_CASE_VERSION) != SERVER_CASE_VERSION:
        _fail("version", f"{SERVER_CASE_VERSION} expected, got {obj.get('version')!r}")
    if obj.get("level", "server") != "server":
        _fail("level", f"'server' expected, got {obj.get('level')!r}")
    cfg = _config(obj.get("config", {}))
    reqs = obj.get("requests", [])
    if not isinstance(reqs, list) or not 1 <= len(reqs) <= MAX_REQUESTS:
        _fail("requests", f"a list of 1..{MAX_REQUESTS} requests expected")
    kind = obj.get("kind", "custom")
    if not isinstance(kind, str):
        _fail("kind", f"a string expected, got {kind!r}")
    case = ServerCase(config=cfg, model=_model(obj.get("model", {})),
                      requests=tuple(_request(i, r) for i, r in enumerate(reqs)),
                      payload_seed=_int("payload_seed", obj.get("payload_seed", 0), 0, 2**31),
                      kind=kind)
    validate(case)
    return case


def validate(case: ServerCase) -> None:
    """The cross-field rules of a server-level Case (each message names its field)."""
    c, m = case.config, case.model
    for name in ("full_tokens", "swa_tokens"):
        if getattr(m, name) % c.page_size:
            _fail(f"model.{name}", f"a multiple of config.page_size ({c.page_size}) expected, "
                  f"got {getattr(m, name)}")
    tail = c.enable_decoder_swa_bounded_replay
    if tail and not 1 <= m.late_layer_start < m.layers:
        _fail("model.late_layer_start", f"a layer in 1..{m.layers - 1} (model.layers - 1) "
              f"expected with config.enable_decoder_swa_bounded_replay, got {m.late_layer_start}")
    if not tail and m.late_layer_start:
        _fail("model.late_layer_start", "0 expected without "
              "config.enable_decoder_swa_bounded_replay")
    spec = c.speculative_algorithm is not None
    for name in ("speculative_num_steps", "speculative_eagle_topk",
                 "speculative_num_draft_tokens"):
        if spec and getattr(c, name) is None:
            _fail(f"config.{name}", f"an integer expected with speculative_algorithm "
                  f"{c.speculative_algorithm}")
        if not spec and getattr(c, name) is not None:
            _fail(f"config.{name}", "null expected without a speculative_algorithm")
    ranks = c.dp_size if c.enable_dp_attention else 1
    groups: dict[int, int] = {}
    for i, r in enumerate(case.requests):
        p = f"requests[{i}]"
        if r.rank >= ranks:
            _fail(f"{p}.rank", f"a rank in 0..{ranks - 1} expected (the config's data-parallel "
                  f"attention ranks), got {r.rank}")
        if r.accept_lengths and not spec:
            _fail(f"{p}.accept_lengths", "empty expected without a speculative_algorithm")
        if spec and any(a > c.speculative_num_draft_tokens for a in r.accept_lengths):
            _fail(f"{p}.accept_lengths", f"each at most speculative_num_draft_tokens "
                  f"({c.speculative_num_draft_tokens})")
        if r.abort_step is not None and r.abort_step < r.arrive_step:
            _fail(f"{p}.abort_step", f"at or after arrive_step ({r.arrive_step}) expected")
        if r.prefix_group is not None:
            if groups.setdefault(r.prefix_group, r.prefix_len) != r.prefix_len:
                _fail(f"{p}.prefix_len", f"every request of prefix_group {r.prefix_group} shares "
                      f"one prefix_len ({groups[r.prefix_group]})")
        need = r.prompt_len + r.max_new_tokens + c.page_size
        if need > m.full_tokens:
            _fail(f"{p}.prompt_len", f"prompt_len + max_new_tokens + page_size ({need}) must fit "
                  f"model.full_tokens ({m.full_tokens})")
