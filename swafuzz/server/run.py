"""One server-level Case: refused or run through a target's pipeline and judged.

:func:`release_refusal` is the seam for the release's own argument checks (``ServerArgs``
post-init and the DeepSeek-V4/V4.1 feature validation, built in
``swafuzz/targets/sglang/serverargs.py``): it returns the release's refusal message, or None.
Where that module is absent every config the Case validator accepts is let through.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from swafuzz.server.case import ServerCase
from swafuzz.server.observation import ServerObs
from swafuzz.server.oracle import ServerFailure, judge

#: the module holding the release's own ServerArgs checks (imports SGLang)
SERVERARGS = "swafuzz.targets.sglang.serverargs"
#: the target pipelines a server-level Case runs on (target -> module:function, imports SGLang)
PIPELINES = {"sglang": "swafuzz.targets.sglang.pipeline.steps:run_server_case"}
#: the server mutants of each target (target -> module:attribute naming them, imports nothing)
MUTANTS = {"sglang": "swafuzz.targets.sglang.pipeline.hops:SERVER_MUTANTS"}
#: what the pipeline does not drive yet: (predicate, refusal)
NOT_DRIVEN = (
    (lambda c: c.speculative_algorithm is not None, "config.speculative_algorithm: speculative "
     "decoding is not driven at server level yet (allowed: null)"),
    (lambda c: c.tp_size != 1 or c.dp_size != 1 or c.enable_dp_attention,
     "config.tp_size and the data-parallel fields: one rank only at server level (allowed: one "
     "tensor-parallel rank, one data-parallel rank, no data-parallel attention; padding across "
     "ranks is helper dppad's)"),
    (lambda c: not c.disable_cuda_graph and not c.cuda_graph_bs_decode,
     "config.cuda_graph_bs_decode: the decode graph batch sizes must be given with "
     "disable_cuda_graph false (the release derives its default list from the GPU's memory; "
     "allowed: a list of batch sizes)"),
    (lambda c: not c.disable_radix_cache, "config.disable_radix_cache: prefix sharing through "
     "the radix cache is not driven at server level yet (allowed: true)"),
    (lambda c: c.enable_encoder_swa_bounded_replay or c.enable_decoder_swa_bounded_replay,
     "config.enable_encoder_swa_bounded_replay / enable_decoder_swa_bounded_replay: V4.1 "
     "bounded replay is not driven at server level yet (allowed: false)"),
)


class ServerRefused(ValueError):
    """A server-level Case the target does not run (CLI exit 2): the message says why."""


def release_refusal(config: dict) -> str | None:
    """The release's refusal of the ServerArgs fields ``config``, or None when it accepts them
    (or when the release's checks are not built here)."""
    try:
        mod = importlib.import_module(SERVERARGS)  # imports SGLang (optional)
    except ModuleNotFoundError as e:
        if e.name != SERVERARGS:
            raise
        return None
    return mod.release_refusal(config)


def refusal(case: ServerCase) -> str | None:
    """Why ``case`` is not run: the pipeline's limits, then the release's own checks."""
    for applies, why in NOT_DRIVEN:
        if applies(case.config):
            return why
    chunk = case.config.chunked_prefill_size
    long = [i for i, r in enumerate(case.requests) if chunk is not None and r.prompt_len > chunk]
    if long:
        return (f"requests[{long[0]}].prompt_len: longer than config.chunked_prefill_size "
                f"({chunk}); chunking a prompt is not driven at server level yet (allowed: a "
                "prompt of at most chunked_prefill_size tokens, or chunked_prefill_size null)")
    why = release_refusal(case.config.server_args())
    return f"the release refuses these server arguments: {why}" if why else None


def load_pipeline(target: str):
    """The run function of ``target``'s pipeline (imports SGLang; a release lacking a hop
    raises the target's TargetUnavailable naming it)."""
    mod, fn = PIPELINES[target].split(":")
    return getattr(importlib.import_module(mod), fn)  # imports SGLang (optional)


def mutants_of(target: str) -> dict[str, str]:
    """Server mutant name -> source, for ``target`` (none without a pipeline)."""
    if target not in MUTANTS:
        return {}
    mod, attr = MUTANTS[target].split(":")
    return dict(getattr(importlib.import_module(mod), attr))


def levels_of(target: str) -> tuple[str, ...]:
    return ("component", "server") if target in PIPELINES else ("component",)


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


def execute(case: ServerCase, target: str = "sglang", impl: str = "torch",
            mutant: str | None = None, executor=None) -> ServerVerdict:
    """Run ``case`` on ``target``'s pipeline (``mutant``: a server mutant's patch of the
    release's pipeline code; ``executor``: the harness's executor, its ``graphs`` deciding
    whether decode graphs replay) and judge it; :class:`ServerRefused` when the target does
    not run it."""
    if target not in PIPELINES:
        raise ServerRefused(f"--level server: target {target} has no server-level pipeline "
                            f"(targets with one: {', '.join(PIPELINES)})")
    why = refusal(case)
    if why:
        raise ServerRefused(why)
    run = load_pipeline(target)
    obs = run(case, impl=impl, mutant=mutant, executor=executor)
    graphs = bool(getattr(executor, "graphs", False))
    return ServerVerdict(case, obs, judge(case, obs, graphs=graphs))
