"""pytest plugin: the ``swafuzz_check`` fixture (run a Case, fail with the one-line repro
command), ``--swafuzz-plugin`` for target plugins, and swafuzz's markers.

In a host suite (``-p swafuzz.harness.pytest_plugin``) it adds only its markers and
``--swafuzz-*`` options; Hypothesis settings, environment and selection stay the host's (Cases on
the Triton path without CUDA need ``TRITON_INTERPRET=1`` or ``impl="torch"``). swafuzz's own
suite opts in (``swafuzz_suite = true`` ini or ``--swafuzz-suite``) to the Hypothesis profiles
``dev`` (default), ``ci`` (derandomized, no deadline, no database; when ``CI`` is set) and
``nightly`` (``HYPOTHESIS_PROFILE`` overrides), and to skipping tests marked ``gpu`` /
``cudagraph`` (no CUDA), ``nightly`` and ``bigmem`` (unless selected with ``-m``).
"""

from __future__ import annotations

import os
import tempfile

import pytest
import torch
from hypothesis import HealthCheck, settings

from swafuzz.harness.pipeline.execute import execute
from swafuzz.reports.bundle import write_bundle
from swafuzz.targets import plugins

MARKERS = {
    "gpu": "needs a CUDA GPU (compiled Triton, CUDA C++ twins)",
    "cudagraph": "uses real torch.cuda.CUDAGraph capture and replay",
    "nightly": "long exploration; not part of the CI gate",
    "upstream": "drives an installed upstream package (a target's optional extra)",
    "install": "builds and installs packages into fresh venvs (install tier)",
    "zoo": "runs the bug zoo (the reduced CI kill matrix)",
}

#: swafuzz's own Hypothesis profiles (registered and loaded only for a suite that opts in)
PROFILES = {
    "ci": dict(derandomize=True, deadline=None, print_blob=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]),
    "dev": dict(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]),
    "nightly": dict(max_examples=5000, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow]),
}


def use_suite_profiles() -> str:
    """Register swafuzz's Hypothesis profiles and load one: ``HYPOTHESIS_PROFILE``, else
    ``ci`` when ``CI`` is set, else ``dev``. Returns the name loaded."""
    for name, kw in PROFILES.items():
        settings.register_profile(name, **kw)
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    settings.load_profile(name)
    return name


def suite_policy(config) -> bool:
    """Whether this pytest run asked for swafuzz's own test-suite policy."""
    return bool(config.getoption("swafuzz_suite", default=False)
                or config.getini("swafuzz_suite"))


def pytest_addoption(parser):
    parser.addoption("--swafuzz-plugin", action="append", default=[], metavar="MODULE",
                     help="swafuzz target plugin module to load (repeatable; also the "
                          "SWAFUZZ_PLUGINS variable and the 'swafuzz.targets' entry points)")
    parser.addoption("--swafuzz-suite", action="store_true", default=False,
                     help="apply swafuzz's own test-suite policy: its Hypothesis profiles "
                          "(dev / ci under CI / HYPOTHESIS_PROFILE) and the skips of its "
                          "gpu, cudagraph, nightly and bigmem markers")
    parser.addini("swafuzz_suite", type="bool", default=False,
                  help="as --swafuzz-suite (swafuzz's own pyproject.toml sets it)")


def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    if suite_policy(config):
        use_suite_profiles()
    try:
        for m in config.getoption("swafuzz_plugin", default=[]) or []:
            plugins.load_module(m, source="--swafuzz-plugin")
        plugins.load_env()
    except plugins.PluginError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_collection_modifyitems(config, items):
    if not suite_policy(config):
        return  # a host suite's markers mean what the host says
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
