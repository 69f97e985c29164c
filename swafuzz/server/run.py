"""One server-level Case: refused or run through a target's pipeline and judged.

A target with a server level offers hooks (its ``server_pipeline``, ``server_refusal`` and
``server_mutants``, :mod:`swafuzz.targets.protocol` style, resolved by the harness into a
:class:`Pipeline`). :func:`release_refusal` is the seam for the release's own argument checks
(``ServerArgs`` post-init and the DeepSeek-V4/V4.1 feature validation; the ``sglang`` target's
``server_refusal`` names ``swafuzz/targets/sglang/serverargs.py``): it returns the release's
refusal message, or None. Where the target has no such check (or its module is absent) every
config the Case validator accepts is let through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from swafuzz import features as registry
from swafuzz.server import spec_oracle
from swafuzz.server.case import ServerCase
from swafuzz.server.observation import ServerObs
from swafuzz.server.oracle import ServerFailure, judge


@dataclass(frozen=True)
class Pipeline:
    """A target's server level: ``run(case, impl=, mutant=, executor=) -> ServerObs``, the
    release's own argument check (``config dict -> refusal or None``; None: not built), and
    its server mutants (name -> source)."""

    run: Callable[..., ServerObs]
    check: Callable[[dict], str | None] | None = None
    mutants: dict[str, str] = field(default_factory=dict)


#: what the pipeline does not drive yet: (predicate, refusal)
NOT_DRIVEN = (
    (lambda c: c.speculative_algorithm is not None and not spec_oracle.driven(c),
     spec_oracle.NOT_DRIVEN),
    (lambda c: (c.tp_size, c.dp_size, c.enable_dp_attention) != (1, 1, False) and not (
        c.tp_size == 2 and c.dp_size == 1 and not c.enable_dp_attention
        and c.moe_dense_tp_size == 1) and (c.tp_size, c.dp_size, c.enable_dp_attention) != (
        2, 2, True),
     "config.tp_size and the data-parallel fields: one rank, attention TP 2, or two "
     "data-parallel attention ranks (allowed: "
     "tp_size 1, dp_size 1, no data-parallel attention; or tp_size 2 with moe_dense_tp_size 1, "
     "dp_size 1, no data-parallel attention: both attention-TP ranks hold the batch, padded "
     "by the release's MLP sync; or tp_size 2, dp_size 2 and data-parallel attention: "
     "one pipeline per rank, each rank's batch padded by the release's MLP sync)"),
    (lambda c: c.enable_dp_attention and c.speculative_algorithm is not None,
     "config.speculative_algorithm: speculative decoding on data-parallel attention ranks is "
     "not driven at server level yet (allowed: null with data-parallel attention)"),
    (lambda c: c.tp_size > 1 and not c.disable_cuda_graph,
     "config.disable_cuda_graph: decode graphs with attention TP > 1 are not driven at server "
     "level yet (allowed: true with tp_size 2)"),
    (lambda c: not c.disable_cuda_graph and not c.cuda_graph_bs_decode,
     "config.cuda_graph_bs_decode: the decode graph batch sizes must be given with "
     "disable_cuda_graph false (the release derives its default list from the GPU's memory; "
     "allowed: a list of batch sizes)"),
    (lambda c: not c.disable_radix_cache, "config.disable_radix_cache: prefix sharing through "
     "the radix cache is not driven at server level yet (allowed: true)"),
    (lambda c: c.enable_decoder_swa_bounded_replay and not (
        c.enable_encoder_swa_bounded_replay and c.tp_size == 1),
     "config.enable_decoder_swa_bounded_replay: the late-layer tail is driven at server level "
     "with enable_encoder_swa_bounded_replay on one rank only (allowed: false, or true with "
     "enable_encoder_swa_bounded_replay true and tp_size 1)"),
    (lambda c: c.enable_encoder_swa_bounded_replay and not c.disable_cuda_graph,
     "config.disable_cuda_graph: decode graphs with enable_encoder_swa_bounded_replay are "
     "not driven at server level yet (allowed: true)"),
)


class ServerRefused(ValueError):
    """A server-level Case the target does not run (CLI exit 2): the message says why."""


def release_refusal(config: dict, check: Callable[[dict], str | None] | None,
                    env: dict[str, str] | None = None) -> str | None:
    """The release's refusal of the ServerArgs fields ``config`` through ``check`` (the
    target's ``server_refusal``; ``env``: the deployment's environment variables, handed as
    ``env=`` when set), or None when it accepts them or no check is built."""
    if check is None:
        return None
    return check(config, env=env) if env else check(config)


def refusal(case: ServerCase, check: Callable[[dict], str | None] | None = None) -> str | None:
    """Why ``case`` is not run: the pipeline's limits, then the release's own checks."""
    for applies, why in NOT_DRIVEN:
        if applies(case.config):
            return why
    why = release_refusal(case.config.server_args(), check, case.config.env_dict())
    return f"the release refuses these server arguments: {why}" if why else None


@dataclass
class ServerVerdict:
    case: ServerCase
    obs: ServerObs
    failures: list[ServerFailure] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def signature(self) -> str | None:
        return self.failures[0].signature() if self.failures else None


def execute(case: ServerCase, pipeline: Pipeline, impl: str = "torch",
            mutant: str | None = None, executor=None) -> ServerVerdict:
    """Run ``case`` through ``pipeline`` (``mutant``: a server mutant's patch of the release's
    pipeline code; ``executor``: the harness's executor, its ``graphs`` deciding whether
    decode graphs replay) and judge it; :class:`ServerRefused` when it is not run."""
    why = refusal(case, pipeline.check)
    if why:
        raise ServerRefused(why)
    if mutant is not None and mutant not in pipeline.mutants:
        raise ServerRefused(f"server mutant {mutant!r}: not one of the target's (allowed: "
                            f"{', '.join(pipeline.mutants) or 'none'})")
    obs = pipeline.run(case, impl=impl, mutant=mutant, executor=executor)
    return ServerVerdict(case, obs, judge_obs(case, obs, bool(getattr(executor, "graphs", False))))


def judge_obs(case: ServerCase, obs: ServerObs, graphs: bool = False,
              disabled=frozenset()) -> list[ServerFailure]:
    """The server oracle's failures of ``obs`` (``graphs``: decode graphs replayed;
    ``disabled``: the server checks not run, by name: the zoo's leave-one-out judges the same
    observation again without one)."""
    if obs.ranks:  # attention-DP ranks: each judged on its own observation
        return registry.hook("server.ranks_judge")(case, obs, graphs, disabled)
    if case.config.speculative_algorithm:
        return spec_oracle.judge(case, obs, disabled)
    return judge(case, obs, graphs=graphs, disabled=disabled)
