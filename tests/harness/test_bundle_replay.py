"""Bundles are portable: Cases written by a campaign on one machine replay on any other.

``tests/data/bundles/`` holds bundles written by ``swafuzz zoo`` on the CPU machine (Triton
interpreter, tape executor). Here they replay under this machine's executors (on the GPU gate:
compiled Triton and real CUDA graphs): the mutant each came from must still fail, and ``unified``
must pass the same Case. Reproduce one: ``swafuzz repro tests/data/bundles/<name>.json``.
"""

import glob
import os

import pytest

from swafuzz.harness.pipeline.execute import execute, resolve_executors
from swafuzz.reports.bundle import read_bundle
from swafuzz.scenarios.case import Case

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLES = sorted(glob.glob(os.path.join(HERE, "..", "data", "bundles", "*.json")))


@pytest.mark.parametrize("path", BUNDLES, ids=[os.path.basename(p) for p in BUNDLES])
def test_bundle_replays(path):
    b = read_bundle(path)
    case = Case.from_json(b["case"])
    impl = "triton"
    bad = execute(case, b["target"], impl, resolve_executors("auto"))
    assert bad.failed, f"{b['target']} no longer fails on its own bundle"
    good = execute(case, "unified", impl, resolve_executors("auto"))
    assert not good.failed, [f.message for f in good.failures]


STORED = sorted(glob.glob(os.path.join(HERE, "..", "data", "bundles", "**", "*.json"),
                          recursive=True))


@pytest.mark.parametrize("path", STORED, ids=[os.path.relpath(p, HERE) for p in STORED])
def test_stored_bundle_names_its_own_repro_line(path):
    """A stored bundle's ``command`` is the repro line from the checkout's root (it was a
    /tmp path of the campaign that wrote it in 8 of them)."""
    want = "swafuzz repro " + os.path.relpath(path, os.path.join(HERE, "..", "..")).replace(
        os.sep, "/")
    assert read_bundle(path).get("command") == want
