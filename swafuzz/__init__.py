"""swafuzz: correctness verification and fuzzing of the full->SWA KV-location translation path.

Everything swafuzz installs lives under this one import package: ``swafuzz.kernels``,
``swafuzz.targets``, ``swafuzz.oracles``, ``swafuzz.scenarios``, ``swafuzz.harness``,
``swafuzz.reports``, ``swafuzz.bench`` (and ``swafuzz.features``, the per-feature records). The
repository holds them as the folder ``swafuzz/`` itself, laid out exactly as the wheel installs
them, so import-graph tools read the checkout as it is and a checkout runs without installing
(``PYTHONPATH=<checkout>``, the GPU machine).
"""

from __future__ import annotations

__version__ = "0.3.0"
