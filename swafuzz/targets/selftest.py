"""Harness self-test targets (not mutants of the engine): they prove the run loop's promises.

``selftest:segfault`` runs the unified engine and then dereferences a null pointer inside the
case, as a kernel with an illegal memory access would take the process down. The campaign must
record it as a ``crash`` finding on disk and go on with the next case.

``selftest:cuda_sticky`` simulates a *sticky* CUDA error (an illegal address or a device-side
assert): the case itself returns normally (CUDA reports the error asynchronously), but the
process's device context is broken from then on and every later device call raises
``RuntimeError: CUDA error: ...``. The worker must notice after the case (its context probe,
:func:`simulated_context_error` on CPU, a device sync on a GPU), record a ``crash`` finding for
that case and replace itself, instead of failing the next case with a harness error.
"""

from __future__ import annotations

import ctypes

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
