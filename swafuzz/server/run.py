"""One server-level Case: refused or run through a target's pipeline and judged.

A target with a server level offers ``server_pipeline``, ``server_refusal`` and
``server_mutants`` (resolved by the harness into a :class:`Pipeline`). :func:`refusal`: the
feature records' server-level ``Refusal`` entries, then :func:`release_refusal` (the release's
own argument checks, e.g. ``swafuzz/targets/sglang/serverargs.py``: its message or None; no
such check: every valid config passes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from swafuzz import features as registry
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
    """Why ``case`` is not run: the records' server-level ``Refusal`` entries, then the target's
    ``server_refusal`` (the release's own checks)."""
    why = registry.refusal("server", case.config)
    if why:
        return why
    why = release_refusal(case.config.server_args(), check, case.config.env_dict())
    return f"the release refuses these server arguments: {why}" if why else None


@dataclass
class ServerResult:
    """A server-level Case's verdict (the campaign's ``Verdict`` interface: ``failed``,
    ``signature()``, ``identity()``, ``checks_run``, ``seconds``; its JSON in the case log and
    the case worker's reply). ``obs``: the observation, in the process that ran the Case only."""

    case: ServerCase
    failures: list[ServerFailure] = field(default_factory=list)
    out_of_scope: str | None = None
    observed: dict[str, Any] | None = None  # failing only: ServerObs.to_json()
    target_version: str | None = None
    seconds: float = 0.0
    checks_run: int = 0  # the server oracle judges a Case whole: 1 when it ran
    obs: ServerObs | None = field(default=None, compare=False, repr=False)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def signature(self) -> str:
        return self.failures[0].signature() if self.failures else ""

    def identity(self) -> str:
        """Shrinking keeps the failing check (the server oracle names no raising location)."""
        return self.signature()

    def to_json(self) -> dict[str, Any]:
        return {"failures": [f.to_json() for f in self.failures], "checks_run": self.checks_run,
                "seconds": self.seconds, "out_of_scope": self.out_of_scope,
                "observed": self.observed, "target_version": self.target_version}

    @staticmethod
    def from_json(case: ServerCase, d: dict[str, Any]) -> ServerResult:
        return ServerResult(case, [ServerFailure(**f) for f in d.get("failures") or []],
                            d.get("out_of_scope"), d.get("observed"), d.get("target_version"),
                            d.get("seconds", 0.0), d.get("checks_run", 0))


def case_size(case: ServerCase) -> tuple[int, int, int]:
    """A server-level Case's size while shrinking: requests, tokens, JSON length."""
    tokens = sum(r.prompt_len + r.max_new_tokens for r in case.requests)
    return (len(case.requests), tokens, len(case.dumps()))


def execute(case: ServerCase, pipeline: Pipeline, impl: str = "torch",
            mutant: str | None = None, executor=None) -> ServerResult:
    """Run ``case`` through ``pipeline`` (``mutant``: a server mutant's patch of the release's
    pipeline code; ``executor``: the harness's executor, its ``graphs`` deciding whether
    decode graphs replay) and judge it; :class:`ServerRefused` when it is not run."""
    why = refusal(case, pipeline.check)
    if why:
        raise ServerRefused(why)
    if mutant is not None and mutant not in pipeline.mutants:
        raise ServerRefused(f"server mutant {mutant!r}: not one of the target's (allowed: "
                            f"{', '.join(pipeline.mutants) or 'none'})")
    t0 = time.perf_counter()
    obs = pipeline.run(case, impl=impl, mutant=mutant, executor=executor)
    judged = judge_obs(case, obs, bool(getattr(executor, "graphs", False)))
    return ServerResult(case, judged, obs.out_of_scope, obs.to_json() if judged else None,
                        obs.target_version or None, time.perf_counter() - t0, 1, obs)


def judge_obs(case: ServerCase, obs: ServerObs, graphs: bool = False,
              disabled=frozenset()) -> list[ServerFailure]:
    """The server oracle's failures of ``obs`` (``disabled``: checks not run, for the zoo's
    leave-one-out)."""
    for own in registry.hooks("oracle.server_judge"):  # attention-DP ranks, speculative, ...
        found = own(case, obs, graphs, disabled)
        if found is not None:
            return found
    return judge(case, obs, graphs=graphs, disabled=disabled)
