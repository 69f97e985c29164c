"""The installed release's own server-argument checks, on a CPU machine.

    release_refusal({"tp_size": 2, "enable_dp_attention": True, ...}) -> None | "the message"

:func:`check_server_args` builds the release's ``ServerArgs`` from a dict of its field names and
runs its whole resolution (``__post_init__`` 0.5.12-style or ``resolve_once`` 0.5.22-style with
the V4 defaults and V4.1 validation; detected by :func:`release_shape`). The model is a stand-in
``config.json`` (no weights or tokenizer; ``DeepseekV4ForCausalLM``, type ``deepseek_v41`` or
``deepseek_v4``) in a temporary folder; ``device`` is ``cuda`` unless given and the release's
environment probes answer as an H200 (or B200) via
:func:`~swafuzz.targets.sglang.serverargs_probes.patched_probes` (reasons:
:data:`~swafuzz.targets.sglang.serverargs_probes.PLATFORMS`). No validation rule is replaced.

A refusal is the release's own ``ValueError`` / ``AssertionError`` / ``NotImplementedError``
message; anything else is a :class:`ServerArgsBuildError`. ``os.environ`` is restored after each
build.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import json
import logging
import os
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from swafuzz.targets.sglang import installed_version
from swafuzz.targets.sglang.serverargs_probes import PLATFORMS, patched_probes

#: model type -> the stand-in's config.json (the architecture the release's model hooks and
#: model config read; shapes small and consistent, no weights)
_BASE_CONFIG: dict[str, object] = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 16,
    "num_key_value_heads": 1, "vocab_size": 1024, "torch_dtype": "bfloat16",
    "head_dim": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 448, "v_head_dim": 512,
    "sliding_window": 128, "window_size": 128, "index_head_dim": 128, "index_n_heads": 64,
    "index_topk": 512, "compress_ratios": [0, 4], "rope_scaling": {}, "kv_lora_rank": 512,
    "q_lora_rank": 1024, "n_routed_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 256, "intermediate_size": 256, "max_position_embeddings": 65536,
}
MODEL_TYPES = ("deepseek_v41", "deepseek_v4")

#: fields this module owns (the stand-in's folder); a config may not set them
OWNED_FIELDS = ("model_path", "tokenizer_path")
#: fields set unless the config sets them: a GPU runner's device; no tokenizer in the stand-in
DEFAULTS: dict[str, object] = {"device": "cuda", "skip_tokenizer_init": True}

#: the exceptions through which the release's argument checks refuse a combination
REFUSALS = (ValueError, AssertionError, NotImplementedError)

class ServerArgsConfigError(ValueError):
    """The config dict is not a set of the installed release's ServerArgs fields."""


class ServerArgsBuildError(RuntimeError):
    """The build failed outside the release's argument checks (the stand-in, this module)."""


@dataclass(frozen=True)
class ReleaseShape:
    """What the installed release's ServerArgs is, detected from the release."""

    version: str
    resolves: bool          # a ``resolve_once`` pipeline (else the dataclass __post_init__)
    knows_v41: bool         # the release has the DeepSeek-V4.1 config module
    fields: tuple[str, ...]

    @property
    def default_model_type(self) -> str:
        return "deepseek_v41" if self.knows_v41 else "deepseek_v4"


@dataclass(frozen=True)
class ArgsVerdict:
    """The release's answer to one server-argument combination."""

    accepted: bool
    message: str | None = None     # the release's message when it refuses
    error: str | None = None       # the exception class it refused with
    where: str | None = None       # the release file:function that raised
    model_type: str = ""
    platform: str = ""
    resolved: dict[str, object] = field(default_factory=dict)  # every field, as resolved


def release_shape() -> ReleaseShape:
    """Detect the installed release's ServerArgs kind and the fields it takes."""
    from sglang.srt import server_args as module

    cls = module.ServerArgs
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
    else:
        from sglang.srt.arg_groups.arg_utils import record_fields
        names = tuple(f.name for f in record_fields(cls))
    return ReleaseShape(
        version=installed_version() or "?", resolves=hasattr(cls, "resolve_once"),
        knows_v41=importlib.util.find_spec("sglang.srt.configs.deepseek_v41") is not None,
        fields=names)


def validate_config(config: Mapping[str, object], shape: ReleaseShape) -> dict[str, object]:
    """The config as keyword arguments, or :class:`ServerArgsConfigError` naming the field."""
    if not isinstance(config, Mapping):
        raise ServerArgsConfigError(
            f"server_args: expected a dict of ServerArgs field names, got {type(config).__name__}")
    known = set(shape.fields)
    out = dict(DEFAULTS)
    for name, value in config.items():
        if not isinstance(name, str):
            raise ServerArgsConfigError(f"server_args: field names are strings, got {name!r}")
        if name in OWNED_FIELDS:
            raise ServerArgsConfigError(
                f"server_args.{name}: set by swafuzz (the model stand-in's folder); remove it")
        if name not in known:
            near = difflib.get_close_matches(name, shape.fields, n=4, cutoff=0.6)
            hint = f"; close: {', '.join(near)}" if near else ""
            raise ServerArgsConfigError(
                f"server_args.{name}: not a ServerArgs field of sglang {shape.version}{hint}")
        if not isinstance(value, (bool, int, float, str, list, type(None))):
            raise ServerArgsConfigError(
                f"server_args.{name}: expected a bool, int, float, str, list or null, "
                f"got {type(value).__name__}")
        out[name] = value
    return out


def write_stand_in(folder: str, model_type: str,
                   extra: Mapping[str, object] | None = None) -> str:
    """Write the stand-in's ``config.json`` into ``folder`` (``extra``: a checkpoint's added keys,
    e.g. a bundled draft head); returns ``folder``."""
    if model_type not in MODEL_TYPES:
        raise ServerArgsConfigError(f"model_type: {model_type!r} is not one of {MODEL_TYPES}")
    values = {**_BASE_CONFIG, **dict(extra or {}), "model_type": model_type}
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(values, fh)
    return folder


def _raiser(exc: BaseException) -> str:
    """``path:function`` of the last frame inside the sglang package."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if "/sglang/" in frame.filename:
            where = f"{frame.filename.split('/sglang/')[-1]}:{frame.name}"
    return where


#: what the stand-in's temporary folder reads as in a verdict (model_path and its copies)
STAND_IN = "<stand-in>"


def _resolved(args: object, names: tuple[str, ...], folder: str) -> dict[str, object]:
    """Every field's resolved value (the last declaration of the 0.5.22-style pipeline, else
    the record's field); values that are not JSON scalars or lists as their ``repr``; the
    stand-in's folder as :data:`STAND_IN`."""
    try:
        from sglang.srt.arg_groups.overrides import resolution_result
    except ImportError:
        resolution_result = None
    out: dict[str, object] = {}
    for name in names:
        value = (resolution_result(args, name) if resolution_result is not None
                 else getattr(args, name, None))
        if isinstance(value, (list, tuple)) and all(
                isinstance(x, (bool, int, float, str, type(None))) for x in value):
            value = list(value)
        elif not isinstance(value, (bool, int, float, str, type(None))):
            value = repr(value)
        out[name] = STAND_IN if value == folder else value
    return out


#: how many modules one build may pre-import after a GPU-only import failed under the probes
MAX_PREIMPORTS = 12


def _first_module(exc: BaseException) -> str | None:
    """The outermost sglang module whose import the exception interrupted (a module-level
    ``if is_cuda(): import sgl_kernel`` seen under the GPU answers), as a dotted name."""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.name == "<module>" and "/sglang/" in frame.filename:
            tail = frame.filename.split("site-packages/")[-1]
            return tail.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return None


def _build(shape: ReleaseShape, kwargs: dict[str, object], folder: str) -> object:
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(model_path=folder, **kwargs)
    if shape.resolves:
        args.resolve_once()
    return args


def _fail(shape: ReleaseShape, kwargs: dict[str, object], exc: BaseException) -> Exception:
    return ServerArgsBuildError(
        f"sglang {shape.version}: building ServerArgs({kwargs}) failed outside the argument "
        f"checks: {type(exc).__name__}: {exc} (at {_raiser(exc) or '?'})")


@contextmanager
def built_server_args(config: Mapping[str, object], *, model_type: str | None = None,
                      platform: str = "h200", env: Mapping[str, str] | None = None,
                      stand_in: Mapping[str, object] | None = None
                      ) -> Iterator[tuple[ArgsVerdict, object | None]]:
    """Build and resolve the release's ServerArgs from ``config``; yields ``(verdict, record)``
    (record None if refused) while the stand-in, probes and ``env`` (``SGLANG_*``, build only)
    are in place (for rules evaluated under ``runtime_context.create_context``). A module that
    imports GPU-only packages under ``is_cuda()`` is pre-imported as the CPU answers and the
    build retried, at most :data:`MAX_PREIMPORTS` times. ``stand_in``: extra ``config.json``
    keys (e.g. a bundled draft head)."""
    if platform not in PLATFORMS:
        raise ServerArgsConfigError(f"platform: {platform!r} is not one of {sorted(PLATFORMS)}")
    shape = release_shape()
    kwargs = validate_config(config, shape)
    model_type = model_type or shape.default_model_type
    if model_type == "deepseek_v41" and not shape.knows_v41:
        raise ServerArgsConfigError(
            f"model_type: sglang {shape.version} has no DeepSeek-V4.1 config; use deepseek_v4")
    for key, value in (env or {}).items():
        if not (isinstance(key, str) and isinstance(value, str)):
            raise ServerArgsConfigError(f"env.{key}: names and values are strings")
    if stand_in is not None and not (isinstance(stand_in, Mapping) and all(
            isinstance(k, str) and k not in ("model_type", "architectures") for k in stand_in)):
        raise ServerArgsConfigError("stand_in: a dict of config.json keys (strings; not "
                                    "model_type or architectures, which swafuzz sets)")
    saved_env = dict(os.environ)
    quiet = logging.getLogger("sglang")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    tried: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="swafuzz-serverargs-") as folder:
            write_stand_in(folder, model_type, stand_in)
            while True:
                os.environ.clear()
                os.environ.update(saved_env)
                os.environ.update(env or {})
                with patched_probes(platform):
                    try:
                        args = _build(shape, kwargs, folder)
                    except REFUSALS as exc:
                        yield (ArgsVerdict(False, str(exc), type(exc).__name__, _raiser(exc),
                                           model_type, platform), None)
                        return
                    except ModuleNotFoundError as exc:
                        module = _first_module(exc)
                        if module is None or module in tried or len(tried) >= MAX_PREIMPORTS:
                            raise _fail(shape, kwargs, exc) from exc
                        tried.append(module)
                    except Exception as exc:
                        raise _fail(shape, kwargs, exc) from exc
                    else:
                        yield (ArgsVerdict(True, model_type=model_type, platform=platform,
                                           resolved=_resolved(args, shape.fields, folder)), args)
                        return
                try:  # outside the probes: the module imports as the CPU answers
                    importlib.import_module(tried[-1])
                except Exception as exc:  # noqa: BLE001 - reported as the build's failure
                    raise _fail(shape, kwargs, exc) from exc
    finally:
        quiet.setLevel(level)
        os.environ.clear()
        os.environ.update(saved_env)


@contextmanager
def release_context(args: object, *, world_rank: int = 0) -> Iterator[object]:
    """The release's ``runtime_context.create_context`` (role ``test``, rank ``world_rank``) from a
    resolved record, active for the duration (``use_context``); 0.5.12-style globals raise
    :class:`ServerArgsBuildError`."""
    from sglang.srt import runtime_context as rc

    if not all(hasattr(rc, n) for n in ("create_context", "use_context", "SpawnRanks")):
        raise ServerArgsBuildError(
            "this release has no scoped runtime context (runtime_context.create_context)")
    ctx = rc.create_context(args, role="test", ranks=rc.SpawnRanks(world_rank=world_rank))
    with rc.use_context(ctx):
        yield ctx


#: verdicts of this process, by their inputs (a build is deterministic for them)
_VERDICTS: dict[str, ArgsVerdict] = {}


def forget_verdicts() -> None:
    """Drop the remembered verdicts (after changing the release in-process, as a test's
    mutant does)."""
    _VERDICTS.clear()


def check_server_args(config: Mapping[str, object], *, model_type: str | None = None,
                      platform: str = "h200", env: Mapping[str, str] | None = None,
                      stand_in: Mapping[str, object] | None = None) -> ArgsVerdict:
    """The release's verdict on ``config`` (:func:`built_server_args`, record dropped);
    remembered per process, so a campaign asking again pays no second build."""
    try:
        key = json.dumps([sorted(dict(config).items()), model_type, platform,
                          sorted(dict(env or {}).items()), sorted(dict(stand_in or {}).items())])
    except (TypeError, ValueError):
        key = None  # not JSON: built_server_args names the bad field
    if key is None or key not in _VERDICTS:
        with built_server_args(config, model_type=model_type, platform=platform, env=env,
                               stand_in=stand_in) as (verdict, _args):
            pass
        if key is None:
            return verdict
        _VERDICTS[key] = verdict
    v = _VERDICTS[key]
    return dataclasses.replace(v, resolved=dict(v.resolved))


def release_refusal(config: Mapping[str, object], *, model_type: str | None = None,
                    platform: str = "h200", env: Mapping[str, str] | None = None,
                    stand_in: Mapping[str, object] | None = None) -> str | None:
    """None when the installed release accepts these server arguments, else its message."""
    verdict = check_server_args(config, model_type=model_type, platform=platform, env=env,
                                stand_in=stand_in)
    return None if verdict.accepted else verdict.message
