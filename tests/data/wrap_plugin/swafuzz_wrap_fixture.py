"""A test plugin for "plugins alike" (issue 27 item 8; ``tests/harness/test_plugin_release.py``):
target ``acme:sglang`` wraps the built-in ``sglang`` target the way a vendor's fork of the
adapter would - its own name, the ``sglang`` factory and hooks underneath (a subclass: every
hook, ``release`` included, is the sglang target's). The ledger's ``sglang`` entries must
classify its findings, and its bundles must record the SGLang release, without the harness
knowing its name. Loaded with ``--plugin swafuzz_wrap_fixture`` (this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from swafuzz.targets import register
from swafuzz.targets.sglang.target import SGLangTarget


class AcmeSGLang(SGLangTarget):
    """The sglang target under another name (what it drives is unchanged)."""

    def __repr__(self) -> str:
        return "<target acme:sglang>"


TARGET = AcmeSGLang()
register("acme:sglang", TARGET)
