"""swafuzz: correctness verification and fuzzing of the full->SWA KV-location translation path.

Everything swafuzz installs lives under this one import namespace: ``swafuzz.kernels``,
``swafuzz.targets``, ``swafuzz.oracles``, ``swafuzz.scenarios``, ``swafuzz.harness``,
``swafuzz.reports`` and ``swafuzz.bench``. In the repository those packages are folders at the
top level (``kernels/``, ``harness/``, ...); ``pyproject.toml`` maps each one into this namespace
(setuptools ``package-dir``), so a wheel or an editable install never puts a bare ``kernels`` or
``harness`` on ``sys.path``, where it would shadow (or be shadowed by) another distribution.

Run straight from a checkout without installing (the GPU machine, where nothing can be
installed): put the checkout on ``PYTHONPATH``; this file then adds the checkout's top-level
folder to the namespace's search path, so ``swafuzz.kernels`` resolves to ``<checkout>/kernels``.
"""

from __future__ import annotations

import os

__version__ = "0.2.0"

#: the subpackages of the namespace, each a top-level folder of the repository
SUBPACKAGES = ("kernels", "targets", "oracles", "scenarios", "harness", "reports", "bench")

_here = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_here, "harness")):  # not an installed wheel
    _top = os.path.dirname(_here)
    if os.path.isfile(os.path.join(_top, "harness", "cli.py")) and os.path.isfile(
            os.path.join(_top, "pyproject.toml")):
        # A checkout (plain PYTHONPATH, or an editable install whose finder maps only the top
        # package): the subpackages are this package's sibling folders.
        __path__.append(_top)  # noqa: F821 - module attribute of a package
