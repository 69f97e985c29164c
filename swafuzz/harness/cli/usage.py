"""The usage-error vocabulary every ``swafuzz`` command shares, import-light (no torch, no
registry): exit codes, :class:`UsageError` and the checks of a value against its field's
allowed values (:mod:`swafuzz.harness.cli.precheck` runs them before anything heavy loads;
:mod:`swafuzz.harness.cli.common` re-exports them to the commands)."""

from __future__ import annotations

import os

from swafuzz.harness.cli.failures import check_out_dir

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_TOOL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGTERM


class UsageError(Exception):
    pass


def check_choice(field: str, value: str, allowed) -> None:
    if value not in allowed:
        raise UsageError(f"{field}: {value!r} is not allowed; choose one of: "
                         f"{', '.join(sorted(allowed))}")


def available_ram() -> int | None:
    """Bytes of memory available for new work (``MemAvailable`` of /proc/meminfo), or None
    where the platform does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def parse_duration(field: str, text: str) -> float:
    """``90s``, ``30m``, ``2h`` or plain seconds -> seconds (> 0)."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    mult = units.get(t[-1:], None)
    num = t[:-1] if mult else t
    try:
        v = float(num) * (mult or 1)
    except ValueError:
        v = -1
    if not v > 0:
        raise UsageError(f"{field}: {text!r} is not allowed; give a positive duration like "
                         "90s, 30m or 2h")
    return v


def positive(field: str, value: int, low: int = 1) -> None:
    if value is None or value < low:
        raise UsageError(f"{field}: must be >= {low} (got {value})")


def prepare_out(out: str, resume: bool) -> None:
    """``--out``: a new or empty directory that can be created (or a run to ``--resume``);
    usage errors otherwise, before anything is written."""
    field = "--resume" if resume else "--out"
    if not out:
        raise UsageError(f"{field}: an empty path is not allowed; give a directory")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"{field}: {out!r} exists and is not a directory")
    if resume:
        if not os.path.isfile(os.path.join(out, "run.json")):
            raise UsageError(f"--resume: {out!r} holds no run to resume (no run.json)")
        return
    if os.path.isdir(out) and os.listdir(out):
        if os.path.isfile(os.path.join(out, "run.json")):  # a run: it can be continued
            raise UsageError(f"--out: {out!r} holds a run already; continue it with --resume "
                             f"{out} or choose a new directory")
        raise UsageError(f"--out: {out!r} is not empty and holds no swafuzz run; give a new "
                         "or empty directory")
    bad = check_out_dir("--out", out)
    if bad:
        raise UsageError(bad)
