"""Harness self-test targets (not mutants of the engine): they prove the run loop's promises.

``selftest:segfault`` runs the unified engine and then dereferences a null pointer inside the
case, as a kernel with an illegal memory access would take the process down. The campaign must
record it as a ``crash`` finding on disk and go on with the next case.
"""

from __future__ import annotations

import ctypes

from swafuzz.targets.engine import UnifiedEngine


class SegfaultEngine(UnifiedEngine):
    def run(self):
        obs = super().run()
        ctypes.string_at(0)  # SIGSEGV: the worker process dies inside the case
        return obs
