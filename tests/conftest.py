"""Test configuration. TRITON_INTERPRET must be set before triton is first imported (CPU), and
the swafuzz pytest plugin registers the markers and the hypothesis profiles (``ci`` under CI)."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["swafuzz.harness.pytest_plugin"]


@pytest.fixture(autouse=True)
def _plugin_state_restored():
    """Each test leaves the target registry and the loaded plugins as it found them: a plugin
    one test loads (``--plugin swafuzz_server_fixture``) would otherwise be asked by a later
    test in the same process (a server zoo picking the fixture's segfaulting pipeline, a case
    worker told to load a module its path lacks)."""
    from swafuzz.targets import plugins, registry

    saved = (dict(registry.TARGETS), dict(registry.ORIGINS), list(plugins._loaded_modules),
             set(plugins._env_done), set(plugins._eps_loaded))
    yield
    import sys

    for mod in set(plugins._loaded_modules) - set(saved[2]):
        sys.modules.pop(mod, None)  # imported again (and its targets registered) when next asked
    registry.TARGETS.clear()
    registry.TARGETS.update(saved[0])
    registry.ORIGINS.clear()
    registry.ORIGINS.update(saved[1])
    plugins._loaded_modules[:] = saved[2]
    plugins._env_done.clear()
    plugins._env_done.update(saved[3])
    plugins._eps_loaded.clear()
    plugins._eps_loaded.update(saved[4])
