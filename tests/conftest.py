"""Test configuration. TRITON_INTERPRET must be set before triton is first imported (CPU), and
the swafuzz pytest plugin registers the markers and the hypothesis profiles (``ci`` under CI)."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["swafuzz.harness.pytest_plugin"]
# the stored exports' SGLang tests (``swafuzz export``) import sglang only: run by
# tests/harness/test_export_upstream.py in the release's environment, never collected here
collect_ignore_glob = ["data/exports/*"]


@pytest.fixture(autouse=True)
def _plugin_state_restored():
    """Each test unloads the plugin modules it loaded (``--plugin swafuzz_server_fixture``) and
    the targets they registered: otherwise a later test in the same process asks them (a
    server zoo picking the fixture's segfaulting pipeline, a case worker told to load a module
    its path lacks). Targets swafuzz registers itself (the zoo's mutants, loaded once) stay."""
    from swafuzz.targets import plugins, registry

    before = list(plugins._loaded_modules)
    yield
    import sys

    new = set(plugins._loaded_modules) - set(before)
    if not new:
        return
    for name in [n for n, rec in registry.ORIGINS.items() if rec.get("module") in new]:
        registry.TARGETS.pop(name, None)
        registry.ORIGINS.pop(name, None)
    for mod in new:
        sys.modules.pop(mod, None)  # imported again (its targets registered) when next asked
    plugins._loaded_modules[:] = before
    plugins._env_done.clear()


@pytest.fixture
def pipeline_here():
    """A release lacking a hop of the server-level pipeline refuses it by name: skip with it
    (the server tests and every other test that runs the release's server pipeline)."""
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.targets import TargetUnavailable

    try:
        pipeline_of("sglang")
    except TargetUnavailable as e:
        pytest.skip(str(e))


def pytest_collection_modifyitems(config, items):
    """The zoo gate (``zoo`` marker, ~80 s on two processes of its own) first: under ``-n 2``
    xdist hands the first items to the first worker, so the longest test starts at once and
    the other worker runs the short ones beside it, instead of the gate starting last and
    running alone at the end. The order is the same on every worker (xdist checks it)."""
    items.sort(key=lambda item: item.get_closest_marker("zoo") is None)  # stable: else as is
