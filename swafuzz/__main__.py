"""``python -m swafuzz`` is the ``swafuzz`` CLI (the installed ``swafuzz`` script calls
:func:`entry` too)."""

import sys

from swafuzz.harness.cli.failures import report_tool_failure
from swafuzz.harness.cli.parser import build_parser
from swafuzz.harness.cli.usage import UsageError

try:  # the light checks read the feature records: a broken feature folder fails here, and is
    from swafuzz.harness.cli.precheck import precheck  # reported by entry() as a tool failure
    _LOAD_ERROR = None
except Exception as e:  # noqa: BLE001 - (after --help / --version, which need no records)
    _LOAD_ERROR = e


def entry() -> int:
    """Parse and :func:`~swafuzz.harness.cli.precheck.precheck` first (``--help``, ``--version``
    and usage errors answer here, before torch loads),
    then :func:`swafuzz.harness.cli.commands.main`; a failure while loading the CLI (a broken feature
    folder: the registry is read when the Case schema is built) is a tool failure: one line,
    the traceback in the log, exit 3."""
    argv = sys.argv[1:2]
    cmd = argv[0] if argv and not argv[0].startswith("-") else "(start)"
    try:
        args = build_parser().parse_args(sys.argv[1:])
    except SystemExit as e:  # --help, --version: 0; a usage error: 2 (argparse printed it)
        return int(e.code or 0)
    try:  # every value these light checks can judge: exit 2 before torch or a target loads
        if _LOAD_ERROR is not None:
            raise _LOAD_ERROR
        precheck(args)
    except UsageError as e:
        print(f"swafuzz {args.cmd}: error: {e}", file=sys.stderr)
        return 2  # EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a broken feature record: a tool failure, as below
        print(report_tool_failure(cmd, e, None), file=sys.stderr)
        return 3  # EXIT_TOOL
    try:
        # the one import inside a function outside optional dependencies: torch and every
        # command's module (about 1 s) load only once the command line is known to be good
        from swafuzz.harness.cli.commands import main
    except KeyboardInterrupt:
        print(f"swafuzz {cmd}: interrupted", file=sys.stderr)
        return 130  # EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        print(report_tool_failure(cmd, e, None), file=sys.stderr)
        return 3  # EXIT_TOOL
    return main()


if __name__ == "__main__":
    sys.exit(entry())
