"""Harness self-test targets (not mutants of the engine): they prove the run loop's promises.

``selftest:segfault`` runs the unified engine, then dereferences a null pointer (as an illegal
memory access would): the campaign must record a ``crash`` finding and go on.
``selftest:cuda_sticky`` simulates a sticky CUDA error: the case returns normally, but every
later device call raises ``RuntimeError: CUDA error: ...``. The worker must notice after the
case (:func:`simulated_context_error` on CPU, a device sync on GPU), record a ``crash`` for that
case and replace itself, rather than fail the next case with a harness error.
``selftest:hang`` runs the unified engine, then waits forever (a wait that is never answered):
the case worker's per-case limit (:mod:`swafuzz.harness.pipeline.casetime`) must end it as a
``timeout`` finding.
"""

from __future__ import annotations

import ctypes
import threading

from swafuzz.targets.engine import UnifiedEngine

STICKY_MESSAGE = ("CUDA error: an illegal memory access was encountered (simulated by "
                  "selftest:cuda_sticky; the context stays broken)")
_sticky: str | None = None


def simulated_context_error() -> str | None:
    """The simulated sticky error of this process, if a ``selftest:cuda_sticky`` case set it."""
    return _sticky


class SegfaultEngine(UnifiedEngine):
    def run(self):
        obs = super().run()
        ctypes.string_at(0)  # SIGSEGV: the worker process dies inside the case
        return obs


class StickyCudaErrorEngine(UnifiedEngine):
    def run(self):
        global _sticky
        if _sticky is not None:  # every device call after a sticky error fails
            raise RuntimeError(_sticky)
        obs = super().run()
        _sticky = STICKY_MESSAGE
        return obs


class HangEngine(UnifiedEngine):
    def run(self):
        obs = super().run()
        threading.Event().wait()  # never set: the case hangs in the code under test
        return obs
