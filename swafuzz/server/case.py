"""The server-level Case: the server arguments that shape the SWA path, the model/pool shape
swafuzz needs, and a request timeline. Plain data, JSON round trip, validated field by field.

Fields are the owning features' :class:`~swafuzz.features.case_field.CaseField` declarations
(``where`` ``config`` / ``model`` / ``request``; the core's in ``features/dense/fields.py``),
assembled (:func:`swafuzz.scenarios.schema.assemble`) into :class:`ServerConfig` (the release's
``ServerArgs`` names, checked as is by :func:`swafuzz.server.run.release_refusal`),
:class:`ModelShape` (what a server reads from the checkpoint or memory budget) and
:class:`Request`: arrives at a step with ``prompt_len`` tokens (the first ``prefix_len`` shared
within its ``prefix_group``), generates up to ``max_new_tokens``, may abort at ``abort_step``,
accepts ``accept_lengths[i]`` at its i-th speculative decode, runs on DP ``rank``. Bad input
raises :class:`~swafuzz.scenarios.schema.CaseError` naming the JSON path and allowed values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from swafuzz.scenarios.schema import (
    CASE_VERSION,
    DECLARED,
    CaseError,
    assemble,
    declaration,
    json_fields,
)
from swafuzz.scenarios.validate import int_field, object_fields, parse_header, parse_object

#: the most requests of a Case (and so of a captured batch) and the last scheduling step a
#: request may arrive or be aborted at: their fields' declared bounds
MAX_REQUESTS = declaration("config", "cuda_graph_bs_decode").hi
MAX_STEPS = declaration("request", "arrive_step").hi
#: per section, the fields emitted in the JSON even at their default (``CaseField.always``)
_ALWAYS = {w: tuple(d.name for d in DECLARED[w] if d.always)
           for w in ("config", "model", "request")}
#: the config's environment-variable fields (handed to the release beside ``server_args()``)
_ENV = tuple(d.name for d in DECLARED["config"] if d.type.startswith("tuple[tuple"))


class ConfigMethods:
    """What a server config derives from its fields (the base of :data:`ServerConfig`)."""

    __slots__ = ()

    def attn_tp_size(self) -> int:
        """The attention-TP ranks that hold each batch: ``tp_size``, over ``dp_size`` with
        data-parallel attention (the release's rule)."""
        return self.tp_size // self.dp_size if self.enable_dp_attention else self.tp_size

    def to_json(self) -> dict[str, Any]:
        """The JSON object: every field of the first bundles, a later one only when set (an
        environment field as an object)."""
        return {k: dict(getattr(self, k)) if k in _ENV else v
                for k, v in json_fields(self, _ALWAYS["config"]).items()}

    def server_args(self) -> dict[str, Any]:
        """The ``ServerArgs`` keyword arguments this config sets: :meth:`to_json` without the
        environment (:meth:`env_dict`)."""
        return {k: v for k, v in self.to_json().items() if k not in _ENV}

    def env_dict(self) -> dict[str, str]:
        """The deployment's environment variables this config sets."""
        return {n: v for k in _ENV for n, v in getattr(self, k)}


ServerConfig = assemble("config", "ServerConfig", ConfigMethods,
                        "Server arguments, under the release's ``ServerArgs`` names.", __name__)
ModelShape = assemble("model", "ModelShape", object, "What the server reads from the "
                      "checkpoint, its memory budget or its environment (not ServerArgs).",
                      __name__)
Request = assemble("request", "Request", object, "One request of the timeline.", __name__)


@dataclass(frozen=True)
class ServerCase:
    config: ServerConfig = field(default_factory=ServerConfig)
    model: ModelShape = field(default_factory=ModelShape)
    requests: tuple[Request, ...] = ()
    payload_seed: int = 0
    kind: str = "custom"

    def to_json(self) -> dict[str, Any]:
        return {"version": CASE_VERSION, "level": "server", "kind": self.kind,
                "payload_seed": self.payload_seed, "config": self.config.to_json(),
                "model": json_fields(self.model, _ALWAYS["model"]),
                "requests": [json_fields(r, _ALWAYS["request"]) for r in self.requests]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(obj: Any) -> ServerCase:
        """Parse and validate (:func:`validate`); raises :class:`CaseError`."""
        return parse(obj)


def parse(obj: Any) -> ServerCase:
    """A :class:`ServerCase` from its JSON form, every field checked (:func:`validate`)."""
    d = object_fields(obj, "case", {"version", "level", "kind", "payload_seed", "config",
                                    "model", "requests"})
    kind = parse_header(d)
    if d.get("level", "server") != "server":
        raise CaseError("case.level", f"must be 'server' (got {d['level']!r})")
    reqs = d.get("requests", [])
    if not isinstance(reqs, list) or not 1 <= len(reqs) <= MAX_REQUESTS:
        raise CaseError("case.requests", f"must be a list of 1..{MAX_REQUESTS} requests")
    case = ServerCase(config=parse_object(d.get("config", {}), "config", "config", ServerConfig),
                      model=parse_object(d.get("model", {}), "model", "model", ModelShape),
                      requests=tuple(parse_object(r, f"requests[{i}]", "request", Request)
                                     for i, r in enumerate(reqs)),
                      payload_seed=int_field(d, "payload_seed", "case", 0, 2**31, default=0),
                      kind=kind)
    validate(case)
    return case


def validate(case: ServerCase) -> None:
    """The cross-field rules of a server-level Case (each message names its field)."""
    c, m = case.config, case.model
    for name in ("full_tokens", "swa_tokens"):
        if getattr(m, name) % c.page_size:
            raise CaseError(f"model.{name}", f"a multiple of config.page_size ({c.page_size}) "
                            f"expected, got {getattr(m, name)}")
    tail = c.enable_decoder_swa_bounded_replay
    if tail and not 1 <= m.late_layer_start < m.layers:
        raise CaseError("model.late_layer_start", f"a layer in 1..{m.layers - 1} (model.layers - "
                        "1) expected with config.enable_decoder_swa_bounded_replay, got "
                        f"{m.late_layer_start}")
    if not tail and m.late_layer_start:
        raise CaseError("model.late_layer_start", "0 expected without "
                        "config.enable_decoder_swa_bounded_replay")
    spec = c.speculative_algorithm is not None
    for name in ("speculative_num_steps", "speculative_eagle_topk",
                 "speculative_num_draft_tokens"):
        if spec and getattr(c, name) is None:
            raise CaseError(f"config.{name}", f"an integer expected with speculative_algorithm "
                            f"{c.speculative_algorithm}")
        if not spec and getattr(c, name) is not None:
            raise CaseError(f"config.{name}", "null expected without a speculative_algorithm")
    ranks = c.dp_size if c.enable_dp_attention else 1
    groups: dict[int, int] = {}
    for i, r in enumerate(case.requests):
        p = f"requests[{i}]"
        if r.prefix_len >= r.prompt_len:
            raise CaseError(f"{p}.prefix_len", f"below prompt_len ({r.prompt_len}) expected, "
                            f"got {r.prefix_len}")
        if r.prefix_len and r.prefix_group is None:
            raise CaseError(f"{p}.prefix_len", "a shared prefix needs a prefix_group")
        if r.rank >= ranks:
            raise CaseError(f"{p}.rank", f"a rank in 0..{ranks - 1} expected (the config's "
                            f"data-parallel attention ranks), got {r.rank}")
        if r.accept_lengths and not spec:
            raise CaseError(f"{p}.accept_lengths",
                            "empty expected without a speculative_algorithm")
        if spec and any(a > c.speculative_num_draft_tokens for a in r.accept_lengths):
            raise CaseError(f"{p}.accept_lengths", f"each at most speculative_num_draft_tokens "
                            f"({c.speculative_num_draft_tokens})")
        if r.abort_step is not None and r.abort_step < r.arrive_step:
            raise CaseError(f"{p}.abort_step",
                            f"at or after arrive_step ({r.arrive_step}) expected")
        if r.prefix_group is not None:
            if groups.setdefault(r.prefix_group, r.prefix_len) != r.prefix_len:
                raise CaseError(f"{p}.prefix_len", f"every request of prefix_group "
                                f"{r.prefix_group} shares one prefix_len "
                                f"({groups[r.prefix_group]})")
        need = r.prompt_len + r.max_new_tokens + c.page_size
        if need > m.full_tokens:
            raise CaseError(f"{p}.prompt_len", f"prompt_len + max_new_tokens + page_size "
                            f"({need}) must fit model.full_tokens ({m.full_tokens})")
