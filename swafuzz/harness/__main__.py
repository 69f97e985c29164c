"""``python -m swafuzz.harness`` is the ``swafuzz`` CLI (``python -m swafuzz`` is the short form)."""

import sys

from swafuzz.harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
