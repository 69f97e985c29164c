"""Lines from a child's pipe, waited for with a timeout.

``select`` on a file object and then its ``readline()`` loses lines: ``readline`` reads what
the pipe holds into the file's buffer and returns only the first line, and the next ``select``
looks at the (now empty) pipe, not at that buffer. A child that wrote a start-up beat and its
``ready`` together (a busy machine: the parent reads late) then looks silent until the start-up
limit (CI's suite hung 12 minutes in ``tests/harness/test_zygote.py`` on that). The reader here
keeps its own buffer and waits on the pipe only when no whole line is buffered.
"""

from __future__ import annotations

import os
import select


class LineReader:
    """Whole lines (bytes, without the newline) from the file descriptor ``fd``, which it
    owns (:meth:`close`)."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buf = b""

    def line(self, timeout: float | None) -> bytes | None:
        """The next line; None at end of file (the writer is gone; a partial last line is
        dropped); TimeoutError when no whole line came within ``timeout`` seconds of waiting
        (None: no limit)."""
        while b"\n" not in self._buf:
            if not select.select([self.fd], [], [], timeout)[0]:
                raise TimeoutError
            data = os.read(self.fd, 65536)
            if not data:
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
