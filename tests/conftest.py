"""Test configuration. TRITON_INTERPRET must be set before triton is first imported (CPU), and
the swafuzz pytest plugin registers the markers and the hypothesis profiles (``ci`` under CI)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["swafuzz.harness.pytest_plugin"]
