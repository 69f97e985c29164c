"""Server-level case workers share one import of the target (``harness.pipeline.zygote``): each
case worker child is a fork of the run's zygote, and behaves as a fresh child would - its
verdicts come back, a segfault inside a Case is a crash with its signal, the next Case gets a
fresh fork, and the zygote is not taken down with it.

No SGLang: ``tests/data/server_plugin``'s ``fixture:server_segv`` (a ``server_decode`` Case of
two requests segfaults). The sglang target's zygote: ``tests/server/test_server_scaling_upstream.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swafuzz.harness.pipeline import zygote
from swafuzz.harness.pipeline.worker import CaseWorker
from swafuzz.server.case import parse
from swafuzz.targets import plugins

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "server_plugin"
CASE = {"kind": "server_decode", "config": {"page_size": 1},
        "model": {"full_tokens": 64, "swa_tokens": 32, "sliding_window": 2, "layers": 1},
        "requests": [{"prompt_len": 3, "max_new_tokens": 2}]}


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.fixture
def workers(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PLUGIN_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.delenv(zygote.ENV, raising=False)
    plugins.load_module("swafuzz_server_fixture")
    made = []

    def make(server=True):
        w = CaseWorker("fixture:server_segv", "torch", ["eager"], str(tmp_path), server=server)
        made.append(w)
        return w
    yield make
    for w in made:
        w.close()
    for z in zygote.Zygote._started.values():
        z.close()
    zygote.Zygote._started.clear()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads parent pids from /proc")
def test_case_workers_are_forks_of_one_zygote(workers):
    a, b = workers(), workers()
    a.start()
    b.start()
    assert isinstance(a._proc, zygote.ZygoteChild) and isinstance(b._proc, zygote.ZygoteChild)
    parent = _ppid(a._proc.pid)
    assert parent == _ppid(b._proc.pid) != os.getpid()  # one zygote, not this process
    assert zygote.key_of(a._setup) in os.environ[zygote.ENV]  # named to the pool's processes
    ok = a.run_server(parse(CASE))
    assert not ok.failed and ok.out_of_scope == "fixture:server_stub runs no forward"
    two = dict(CASE, requests=CASE["requests"] * 2)  # segfaults inside the Case
    crash = b.run_server(parse(two))
    assert [f.check for f in crash.failures] == ["crash"]
    assert "died with exit code -11 (SIGSEGV) inside the case" in crash.failures[0].message
    again = b.run_server(parse(CASE))  # a fresh fork of the same zygote
    assert not again.failed and _ppid(b._proc.pid) == parent
    assert not a.run_server(parse(CASE)).failed  # the other worker's child lived on


def test_component_level_and_off_switch_start_fresh_interpreters(workers, monkeypatch):
    w = workers(server=False)
    w.start()
    assert not isinstance(w._proc, zygote.ZygoteChild)
    monkeypatch.setenv(zygote.ENV, "off")
    s = workers()
    s.start()
    assert not isinstance(s._proc, zygote.ZygoteChild) and _ppid(s._proc.pid) == os.getpid()


def test_a_stuck_zygote_is_a_start_timeout_not_a_fallback(workers, monkeypatch):
    """Issue 27: the zygote's import has no fixed deadline either: it beats while it makes
    progress; one that never progresses (``SWAFUZZ_FAULTS=stuck-worker-start``) ends in a
    StartTimeout naming it (a HarnessError: exit 3), not a silent fresh-interpreter fallback. A
    stuck start never beats, so no load decides this by the clock."""
    from swafuzz.machinery import START_TIMEOUT_ENV, HarnessError, StartTimeout

    monkeypatch.setenv("SWAFUZZ_FAULTS", "stuck-worker-start")
    monkeypatch.setenv(START_TIMEOUT_ENV, "2")
    w = workers()
    with pytest.raises(StartTimeout, match="zygote .* no progress for 2 s") as e:
        w.start()
    assert isinstance(e.value, HarnessError)
    assert all(z.proc.poll() is not None for z in zygote.Zygote._started.values())
