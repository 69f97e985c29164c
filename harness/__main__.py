"""``python -m harness`` is the ``swafuzz`` CLI."""

import sys

from harness.cli import main

sys.exit(main())
