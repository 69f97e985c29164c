"""``python -m swafuzz`` is the ``swafuzz`` CLI."""

import sys

from swafuzz.harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
