"""Tool failures (exit 3: not a finding, not bad input: a swafuzz bug, a full disk, a broken
dependency) and the output-path checks that keep them from happening late.
:func:`report_tool_failure` writes the traceback to ``swafuzz-error.log`` in the command's output
directory, else to a file of its own per user and run (:func:`private_log_path`:
``$XDG_STATE_HOME/swafuzz/error-<pid>-<UTC time>.log``, else ``<tmp>/swafuzz-<user>/...``), and
returns the one line the CLI prints.
"""

from __future__ import annotations

import getpass
import importlib
import os
import sys
import tempfile
import time
import traceback

LOG_NAME = "swafuzz-error.log"


def private_log_path() -> str | None:
    """A new error log of this user and this process (None if none can be made): under
    ``$XDG_STATE_HOME/swafuzz``, else ``<system temp>/swafuzz-<user>`` (mode 0700, owned by
    this user); never a file another run or user shares."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    state = os.environ.get("XDG_STATE_HOME")
    d = (os.path.join(state, "swafuzz") if state
         else os.path.join(tempfile.gettempdir(), f"swafuzz-{user}"))
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
        if not os.path.isdir(d) or os.path.islink(d) or st.st_uid != os.getuid():
            return None
    except OSError:
        return None
    return os.path.join(d, f"error-{os.getpid()}-"
                           f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.log")


def report_tool_failure(cmd: str, exc: BaseException, out_dir: str | None) -> str:
    text = (f"swafuzz {cmd}: tool failure at "
            f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    path = None
    where_to = [os.path.join(out_dir, LOG_NAME)] if out_dir and os.path.isdir(out_dir) else []
    for p in where_to + [private_log_path()]:
        if p is None:
            continue
        try:
            with open(p, "a") as f:
                f.write(text + "\n")
            path = p
            break
        except OSError:
            continue
    where = f"traceback in {path}" if path else "no log could be written"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"swafuzz {cmd}: tool failure: {type(exc).__name__}: {first} ({where})"


def run_tool(module: str, cmd: str) -> int:
    """``python -m MODULE`` run as the ``swafuzz`` script runs a command: MODULE is imported
    and its ``main()`` called; a failure in either (a broken feature folder fails the import:
    the registry is read when the Case schema is built) is a tool failure - one line on stderr,
    the traceback in the log, exit 3 - not a traceback."""
    try:
        return importlib.import_module(module).main()
    except Exception as e:  # noqa: BLE001 - a tool failure: exit 3, traceback to a log file
        print(report_tool_failure(cmd, e, None), file=sys.stderr)
        return 3


def check_out_dir(field: str, path: str) -> str | None:
    """Why ``path`` cannot be the output directory (None when it can): a message naming
    ``field``. Checked before anything is written: the nearest existing folder must take a new
    folder (a probe folder is made there and removed again; ``/proc/x``, a read-only mount or a
    full disk fail here, not after the run has started)."""
    if not path:
        return f"{field}: an empty path is not allowed; give a directory"
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{field}: {path!r} exists and is not a directory"
    parent = os.path.abspath(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):  # a file where a folder of the path should be
        return (f"{field}: {parent!r} is a file, not a directory, so {path!r} cannot be "
                "created; choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{field}: cannot write under {parent!r} (permission denied)"
    if parent == os.path.abspath(path):
        return None  # an existing directory, writable
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".swafuzz-probe-", dir=parent))
    except OSError as e:
        return f"{field}: cannot create {path!r}: {e.strerror or e} (in {parent!r})"
    return None


def check_out_file(field: str, path: str) -> str | None:
    """Why ``path`` cannot be written as a file (None when it can); checked up front."""
    if os.path.isdir(path):
        return f"{field}: {path!r} is a directory; give a file name"
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        return f"{field}: directory {d!r} does not exist"
    if not os.access(d, os.W_OK | os.X_OK) or (os.path.exists(path)
                                                and not os.access(path, os.W_OK)):
        return f"{field}: cannot write {path!r} (permission denied)"
    return None
