"""The shared corpus: with an example database on, a failure found by one campaign is replayed
first by the next (fewer cases to the first failure), with a directory database and with a real
``redis-server`` started on loopback for the test. Bad ``--db`` values exit 2, writing nothing."""

import os
import shutil
import socket
import subprocess
import time

import pytest

from swafuzz.harness.cli.commands import main
from swafuzz.harness.pipeline.campaign import Campaign
from swafuzz.harness.pipeline.corpus import open_database
from swafuzz.harness.pipeline.execute import execute

TARGET = "mutant:pad_rows_not_zeroed"


def _campaign(db):
    run = lambda case: execute(case, TARGET, "torch", ["eager", "tape"])  # noqa: E731
    return Campaign(run, seed=0, shrink=False, database=db, db_key=TARGET)


def _replayed_first(db):
    """(cases to first failure without memory, first campaign, second campaign)."""
    cold = _campaign(None).run_kind("decode", 40)
    first = _campaign(db).run_kind("decode", 40)
    second = _campaign(db).run_kind("decode", 40)
    assert cold.finding is not None and first.finding is not None and second.finding is not None
    return cold.cases_to_first, first.cases_to_first, second.cases_to_first


def test_directory_db_replays_the_failure_first(tmp_path):
    cold, first, second = _replayed_first(open_database(str(tmp_path / "db"), str(tmp_path)))
    assert first == cold > 1  # the same search as without a database
    assert second == 1  # the saved failure is the first case the next campaign runs
    # another kind (or target) has its own key: nothing of decode is replayed there
    idle = _campaign(open_database(str(tmp_path / "db"), str(tmp_path))).run_kind("idle", 2)
    assert idle.finding is None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (Debian package 'redis-server'; "
                    ".ci/run installs it)")
    pytest.importorskip("redis", reason="the 'redis' package (swafuzz[redis]) is not installed")
    import redis

    port = _free_port()
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not answer within 5 s")
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_redis_db_replays_the_failure_first(redis_url, tmp_path):
    cold, first, second = _replayed_first(open_database(redis_url, str(tmp_path)))
    assert first == cold > 1 and second == 1


@pytest.mark.parametrize("spec,words", [
    ("ftp://host:1", "scheme 'ftp'"),
    ("redis://localhost", "needs a host and a port"),
    ("redis://127.0.0.1:6379/x", "must be an integer"),
])
def test_bad_db_exit_2_nothing_written(tmp_path, capsys, spec, words):
    out = tmp_path / "out"
    assert main(["run", "--db", spec, "--out", str(out), "--examples", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--db" in err and words in err, err
    assert not out.exists()


def test_unreachable_redis_exit_2_nothing_written(tmp_path, capsys):
    pytest.importorskip("redis")
    out = tmp_path / "out"
    url = f"redis://127.0.0.1:{_free_port()}"
    assert main(["run", "--db", url, "--out", str(out), "--examples", "1", "--quiet"]) == 2
    assert "cannot reach" in capsys.readouterr().err
    assert not out.exists()


def test_db_file_not_dir(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    assert main(["run", "--db", str(f), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["f"]
