"""A test plugin for the server level's run pipeline (``tests/harness/test_server_isolation.py``,
``tests/server/test_server_isolation_upstream.py``): targets with a server level
(``server_pipeline``) that prove the campaign's promises, not the code under test:

* ``fixture:server_stub`` runs no forward of a Case: its observation stops out of scope before
  the first forward, with every SWA slot poison, which the server oracle passes (nothing ran,
  nothing to judge). No SGLang. ``SWAFUZZ_FIXTURE_CASE_S`` (seconds, default 0) is how long
  each Case takes, for the tests that stop a run midway or give it a budget;
* ``fixture:server_segv``: the stub, but a ``server_decode`` Case with two or more requests
  dereferences a null pointer (SIGSEGV: its process dies inside the Case, as a kernel's illegal
  memory access takes a server down). Other kinds run clean;
* ``fixture:sglang_segv``: every ``server_decode`` Case dereferences a null pointer before
  anything runs (so the case worker it kills never imported the release: one SGLang import per
  test, not two); the other kinds run the ``sglang`` target's own server pipeline (needs
  SGLang; the release's argument check is not consulted: the kinds the test runs need none),
  with the ``sglang`` target's server mutants (``--server-mutant``: patched in the worker).

* ``fixture:server_cov``: the stub, measured by ``--coverage`` (its ``versions`` hook names this
  module: the code under test) with ``coverage_focus`` :data:`COV_FOCUS` (the stub, the segv
  pipeline, which its Cases never call, and a pattern nothing matches).

Loaded with ``--plugin swafuzz_server_fixture`` (this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import ctypes
import os
import time

from swafuzz import features
from swafuzz.scenarios.case import POISON_BYTE
from swafuzz.server.case import ServerCase
from swafuzz.server.observation import ServerObs
from swafuzz.targets import register
from swafuzz.targets.sglang.target import TARGET as SGLANG

SGLANG_PIPELINE = SGLANG.server_pipeline  # the sglang target's own entry (its interpreter patch)


def _crashes(case: ServerCase) -> bool:
    return case.kind == "server_decode" and len(case.requests) >= 2


def stub_pipeline(case: ServerCase, impl: str = "torch", mutant=None, executor=None) -> ServerObs:
    time.sleep(float(os.environ.get("SWAFUZZ_FIXTURE_CASE_S", "0")))
    pool = bytes([POISON_BYTE]) * (case.model.swa_tokens * case.model.row_bytes)
    return ServerObs(target_version="fixture", pools=[pool] * case.model.layers,
                     out_of_scope="fixture:server_stub runs no forward")


def segv_pipeline(case: ServerCase, **kw) -> ServerObs:
    if _crashes(case):
        ctypes.string_at(0)  # SIGSEGV: the case worker dies inside the Case
    return stub_pipeline(case, **kw)


def sglang_segv_pipeline(case: ServerCase, **kw) -> ServerObs:
    if case.kind == "server_decode":
        ctypes.string_at(0)
    return features.load(SGLANG_PIPELINE)(case, **kw)


class ServerFixture:
    """A target factory with a server level only (a component-level Case is refused)."""

    def __init__(self, name: str, pipeline: str, mutants=None):
        self.name, self.server_pipeline = name, pipeline
        if mutants is not None:
            self.server_mutants = mutants

    def __call__(self, case, **kwargs):
        raise RuntimeError(f"{self.name}: a server-level fixture (run it with --level server)")


_HERE = __name__
register("fixture:server_stub", ServerFixture("fixture:server_stub", f"{_HERE}:stub_pipeline"))
register("fixture:server_segv", ServerFixture("fixture:server_segv", f"{_HERE}:segv_pipeline"))
register("fixture:sglang_segv", ServerFixture("fixture:sglang_segv",
                                              f"{_HERE}:sglang_segv_pipeline",
                                              SGLANG.server_mutants))

#: fixture:server_cov's functions of interest (harness.pipeline.coverage_focus)
COV_FOCUS = (f"{_HERE}:stub_pipeline", f"{_HERE}:segv_pipeline", f"{_HERE}:no_such_*")


class CoveredFixture(ServerFixture):
    coverage_focus = f"{_HERE}:COV_FOCUS"

    @staticmethod
    def versions() -> dict[str, str]:
        return {_HERE: "fixture"}


register("fixture:server_cov", CoveredFixture("fixture:server_cov", f"{_HERE}:stub_pipeline"))
