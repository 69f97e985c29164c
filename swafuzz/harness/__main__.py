"""``python -m swafuzz.harness`` is the ``swafuzz`` CLI (``python -m swafuzz`` is the short form)."""

import sys

from swafuzz.__main__ import entry

if __name__ == "__main__":
    sys.exit(entry())
