"""The Case's server arguments under the installed release's ``ServerArgs`` names.

Case fields use 0.5.23's names; one an older release calls otherwise is renamed where the
release lacks the Case's name and has the older (detected, never by version): 0.5.12's
``cuda_graph_bs`` is ``cuda_graph_bs_decode``. The argument checks and the pipeline both get the
renamed config. A field the release lacks entirely (0.5.12: the V4.1 bounded-replay flags) is
dropped while at the Case's default, else the Case is refused naming it. Attention TP > 1 is
refused without the runtime context the padding hop drives (0.5.12).
"""

from __future__ import annotations

import importlib.util
import inspect
import typing
from typing import Mapping

from swafuzz import features as registry
from swafuzz.server.case import ServerConfig
from swafuzz.targets.sglang import serverargs

#: the Case's (0.5.23) name -> the name an older release gives the same field
OLDER_NAMES = {"cuda_graph_bs_decode": "cuda_graph_bs"}


def renamed(config: Mapping[str, object], fields: tuple[str, ...]) -> dict[str, object]:
    """``config`` with each field the release (whose ``ServerArgs`` has ``fields``) lacks under
    the Case's name moved to its older name, where the release has that one."""
    have = set(fields)
    out = {}
    for name, value in config.items():
        old = OLDER_NAMES.get(name)
        if name not in have and old in have:
            out[old] = value
        elif name in have or not _default(name, value):
            out[name] = value
    return out


def absent(config: Mapping[str, object], fields: tuple[str, ...]) -> list[str]:
    """The fields ``config`` sets away from the Case's default that the release lacks under
    every name."""
    have = set(fields)
    return [n for n, v in config.items()
            if n not in have and OLDER_NAMES.get(n) not in have and not _default(n, v)]


def unpadded(config: Mapping[str, object], version: str) -> str | None:
    """Attention TP above 1 where the release lacks the process bring-up the padding hop drives
    (its runtime context: the global-server-args shape, 0.5.12): refused naming why."""
    known = {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()
             if k in ServerConfig.__dataclass_fields__}
    cfg = ServerConfig(**known)
    ranks = cfg.attn_tp_size()
    if (ranks <= 1 and not cfg.enable_dp_attention) or ranked_bring_up():
        return None
    ctx = ("sglang.srt.runtime_context with its ranked publish (SpawnRanks, 0.5.21+)")
    if ranks <= 1:
        return (f"config.enable_dp_attention: sglang {version} has no "
                f"{ctx}, whose MLP-sync bring-up the server-level ranks drive on gloo; on this "
                "release data-parallel attention is not driven (allowed: false)")
    return (f"attention TP {ranks}: sglang {version} has no {ctx}, whose MLP-sync bring-up the "
            "server-level padding hop drives on gloo; on this release that hop is not driven "
            "(tp_size 1 only)")


def ranked_bring_up() -> bool:
    """The release's runtime context publishes a process's ranks (``SpawnRanks``, 0.5.21+; 0.5.12
    has no runtime context, 0.5.18 .. 0.5.20 publish without ranks). Read from its file."""
    spec = importlib.util.find_spec("sglang.srt.runtime_context")
    if spec is None or not spec.origin:
        return False
    with open(spec.origin, encoding="utf-8") as f:
        return "class SpawnRanks" in f.read()


def literal_choices(name: str) -> tuple[str, ...] | None:
    """The values the installed release's ``ServerArgs`` annotation allows for ``name`` (a
    ``Literal``; the release's dataclass does not enforce it itself), or None."""
    from sglang.srt.server_args import ServerArgs

    try:
        hint = typing.get_type_hints(ServerArgs).get(name)
    except Exception:  # noqa: BLE001 - an unresolvable annotation: no choices known
        return None
    if typing.get_origin(hint) is typing.Literal:
        return tuple(typing.get_args(hint))
    return None


def unknown_choice(config: Mapping[str, object], version: str) -> str | None:
    """``moe_a2a_backend`` set to a value the installed release does not offer."""
    value = config.get("moe_a2a_backend")
    choices = literal_choices("moe_a2a_backend") if value is not None else None
    if choices is None or value in choices:
        return None
    return (f"config.moe_a2a_backend: {value!r} is not a backend of sglang {version} "
            f"(allowed: {', '.join(choices)})")


def _default(name: str, value: object) -> bool:
    f = ServerConfig.__dataclass_fields__.get(name)
    return f is not None and f.default == value


def release_config(config: Mapping[str, object]) -> dict[str, object]:
    """``config`` under the installed release's names (imports SGLang)."""
    return renamed(config, serverargs.release_shape().fields)


def release_refusal(config: Mapping[str, object], **kw) -> str | None:
    """The release's own argument checks (:func:`.serverargs.release_refusal`) on the config
    under its names."""
    shape = serverargs.release_shape()
    why = unpadded(config, shape.version) or unknown_choice(config, shape.version)
    if why:
        return why
    missing = absent(config, shape.fields)
    why = None if missing else registry.refusal("server", config, shape.version)
    if why:  # the feature records' release refusals (Refusal(release=True))
        return why
    if missing:
        return (f"sglang {shape.version} has no ServerArgs field "
                f"{', '.join(f'{n} (set to {config[n]!r})' for n in missing)}")
    if config.get("speculative_algorithm") is not None and not importlib.util.find_spec(
            "sglang.srt.speculative.eagle_worker_common"):
        return (f"config.speculative_algorithm: sglang {shape.version} has no spec-v2 EAGLE "
                "worker (sglang.srt.speculative.eagle_worker_common), whose reserve, verify "
                "prep, accept and draft-extend prep the server-level pipeline drives (allowed: "
                "null on this release)")
    if config.get("speculative_algorithm") is not None and not planned_draft():
        return (f"config.speculative_algorithm: sglang {shape.version}'s prepare_for_draft "
                "takes no target_translator (the draft's planned write window, 0.5.22+), the "
                "draft prep the server-level pipeline drives (allowed: null on this release)")
    if config.get("speculative_algorithm") is not None and shape.knows_v41:
        # DeepSeek-V4.1 serves no EAGLE draft (the release's hook says
        # so); EAGLE is DeepSeek-V4's own draft (its MTP layer): checked as that model
        kw.setdefault("model_type", "deepseek_v4")
    return serverargs.release_refusal(renamed(config, shape.fields), **kw)


def planned_draft() -> bool:
    """The release's spec-v2 ``prepare_for_draft`` plans the draft's write window
    (``target_translator``, 0.5.22+): the shape the server-level draft hop drives."""
    from sglang.srt.speculative import eagle_worker_common

    return "target_translator" in inspect.signature(eagle_worker_common.prepare_for_draft).parameters
