"""Fixtures of the server-level tests."""

import pytest


@pytest.fixture
def pipeline_here():
    """A release lacking a hop of the server-level pipeline refuses it by name: skip with it."""
    from swafuzz.harness.pipeline.level_server import pipeline_of
    from swafuzz.targets import TargetUnavailable

    try:
        pipeline_of("sglang")
    except TargetUnavailable as e:
        pytest.skip(str(e))
