"""A child's start-up beat and its ``ready`` read together are both seen
(``harness/pipeline/lines.py``). Reading them with ``select`` on the file and ``readline`` lost
the second line in the file's buffer: the parent then waited for the start-up limit (CI's
suite hung in ``tests/harness/test_zygote.py``). With the limit at 2 s the old readers fail
these tests with a StartTimeout; nothing here is timed."""

from __future__ import annotations

import os
import subprocess

from swafuzz.harness.pipeline.lines import LineReader
from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.harness.pipeline.zygote import Zygote
from swafuzz.machinery import START_TIMEOUT_ENV

BOTH = b'{"starting": 1}\n{"ready": true}\n'


def test_lines_written_together_come_one_by_one():
    r, w = os.pipe()
    reader = LineReader(r)
    os.write(w, BOTH + b'{"partial"')
    assert reader.line(0) == b'{"starting": 1}'
    assert reader.line(0) == b'{"ready": true}'  # from the buffer: the pipe is empty now
    os.close(w)
    assert reader.line(0) is None  # end of file; the partial line is dropped
    reader.close()
    reader.close()  # twice is harmless


def test_a_timeout_is_raised_only_without_a_whole_line():
    r, w = os.pipe()
    reader = LineReader(r)
    os.write(w, b'{"no newline yet"')
    try:
        reader.line(0)
    except TimeoutError:
        pass
    else:
        raise AssertionError("a partial line is no line")
    os.write(w, b"}\n")
    assert reader.line(0) == b'{"no newline yet"}'
    os.close(w)
    reader.close()


def test_a_case_worker_sees_ready_behind_a_beat(monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_ENV, "2")
    worker = CaseWorker("unified", "torch", ["eager"])
    r, w = os.pipe()
    worker._reply = LineReader(r)
    os.write(w, BOTH)
    assert worker._await_started() == {"ready": True}
    os.close(w)
    worker._reply.close()


def test_the_zygote_starter_sees_ready_behind_a_beat(monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_ENV, "2")
    z = object.__new__(Zygote)
    z.proc = subprocess.Popen(["sh", "-c", "printf '%s' \"$0\"; exec sleep 60", BOTH.decode()],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert z._await_started() == {"ready": True}
    finally:
        z.proc.kill()
        z.proc.wait()
        z.proc.stdout.close()
