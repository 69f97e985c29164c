"""pytest plugin: markers, hypothesis profiles, and a fixture that runs a Case and prints the
repro command on failure.

Target plugins: ``--swafuzz-plugin MODULE``, ``SWAFUZZ_PLUGINS`` or the ``swafuzz.targets``
entry points (``swafuzz.targets.plugins``); ``check_case`` runs any registered target.

Load it with ``-p swafuzz.harness.pytest_plugin`` or ``pytest_plugins = ["swafuzz.harness.pytest_plugin"]`` (the
repository's ``tests/conftest.py`` does). Profiles: ``dev`` (default), ``ci`` (derandomized, no
deadline; loaded when ``CI`` is set), ``nightly`` (long exploration); ``HYPOTHESIS_PROFILE``
overrides.
"""

from __future__ import annotations

import os
import tempfile

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

from swafuzz.harness.run import execute  # noqa: E402
from swafuzz.reports.bundle import write_bundle  # noqa: E402
from swafuzz.targets import plugins  # noqa: E402

MARKERS = {
    "gpu": "needs a CUDA GPU (compiled Triton, CUDA C++ twins)",
    "cudagraph": "uses real torch.cuda.CUDAGraph capture and replay",
    "nightly": "long exploration; not part of the CI gate",
    "upstream": "drives an installed upstream package (a target's optional extra)",
    "install": "builds and installs packages into fresh venvs (install tier)",
    "zoo": "runs the bug zoo (the reduced CI kill matrix)",
}

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser):
    parser.addoption("--swafuzz-plugin", action="append", default=[], metavar="MODULE",
                     help="swafuzz target plugin module to load (repeatable; also the "
                          "SWAFUZZ_PLUGINS variable and the 'swafuzz.targets' entry points)")


def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    try:
        for m in config.getoption("swafuzz_plugin", default=[]) or []:
            plugins.load_module(m, source="--swafuzz-plugin")
        plugins.load_env()
    except plugins.PluginError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_collection_modifyitems(config, items):
    has_gpu = torch.cuda.is_available()
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine)")
    nightly_asked = "nightly" in (config.getoption("markexpr", "") or "") or \
        os.environ.get("HYPOTHESIS_PROFILE") == "nightly"
    skip_nightly = pytest.mark.skip(reason="nightly exploration: run with -m nightly")
    expr = config.getoption("markexpr", "") or ""
    bigmem_asked = "bigmem" in expr and "not bigmem" not in expr
    skip_bigmem = pytest.mark.skip(reason="allocates > 2 GiB of RAM: run with -m bigmem")
    for item in items:
        if "bigmem" in item.keywords and not bigmem_asked:
            item.add_marker(skip_bigmem)
        if not has_gpu and ("gpu" in item.keywords or "cudagraph" in item.keywords):
            item.add_marker(skip)
        if "nightly" in item.keywords and not nightly_asked:
            item.add_marker(skip_nightly)


def check_case(case, target: str = "unified", impl: str = "auto", executors=None, out_dir=None):
    """Run ``case``; on failure write its bundle and fail with the one-line repro command."""
    v = execute(case, target, impl, executors)
    if v.failed:
        out = out_dir or tempfile.mkdtemp(prefix="swafuzz-")
        path = write_bundle(out, v.finding(target, impl, ",".join(executors or ["auto"])))
        lines = "\n".join(f"  {f.check}: {f.message}" for f in v.failures[:5])
        pytest.fail(f"swafuzz finding {v.signature()}:\n{lines}\nrepro: swafuzz repro {path}",
                    pytrace=False)
    return v


@pytest.fixture
def swafuzz_check(tmp_path):
    """``swafuzz_check(case, target=..., impl=..., executors=[...])``."""
    return lambda case, **kw: check_case(case, out_dir=str(tmp_path), **kw)
