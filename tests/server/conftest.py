"""Fixtures of the server-level tests: ``pipeline_here`` is the root conftest's (the DP
feature's server tests use it too)."""
