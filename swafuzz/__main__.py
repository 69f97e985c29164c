"""``python -m swafuzz`` is the ``swafuzz`` CLI (the installed ``swafuzz`` script calls
:func:`entry` too)."""

import sys

from swafuzz.harness.failures import report_tool_failure


def entry() -> int:
    """:func:`swafuzz.harness.cli.main`, with a failure while loading the CLI (a broken feature
    folder: the registry is read when the Case schema is built) reported as a tool failure: one
    line, the traceback in the log, exit 3."""
    try:
        from swafuzz.harness.cli import main
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        argv = sys.argv[1:2]
        cmd = argv[0] if argv and not argv[0].startswith("-") else "(start)"
        print(report_tool_failure(cmd, e, None), file=sys.stderr)
        return 3  # EXIT_TOOL
    return main()


if __name__ == "__main__":
    sys.exit(entry())
