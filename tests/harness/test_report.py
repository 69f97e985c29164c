"""``swafuzz report DIR``: summary.md, junit.xml (parses with xml.etree) and summary.html with a
picture of the SWA pool per finding, rendered in headless Chromium when it is installed; findings
grouped by signature, new / known / fixed against a baseline, reliability by reruns; bad input
exits 2 naming the field.

The run the report tests share is a ``python -m swafuzz`` subprocess; the reports themselves go
through :func:`swafuzz.harness.cli.commands.main` in-process (what ``python -m swafuzz`` exits with), so
each does not pay an interpreter and a torch import."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from pngread import pixel_counts  # noqa: E402

from swafuzz.harness.cli.commands import main  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def swafuzz(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "swafuzz", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, env=env, timeout=600)


@pytest.fixture
def cli(capsys):
    """``cli(*args) -> (exit code, stdout + stderr)``: the CLI in-process."""
    def call(*args):
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return code, cap.out + cap.err
    return call


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    r = swafuzz("run", "--examples", "2", "--quiet", "--impl", "torch", "--scenario", "decode",
                "--target", "mutant:host_baked_translation", "--no-isolate", "--out", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"results: {out}" in r.stdout  # the output directory is printed at the end
    assert "forward steps checked" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["target"] == "mutant:host_baked_translation" and meta["forward_steps"] > 0
    assert (out / ".hypothesis-db").is_dir()  # the default example database saved the finding
    return out


def test_report_writes_md_junit_html(run_dir, cli):
    code, out = cli("report", run_dir)
    assert code == 1, out  # findings
    assert "1 new, 0 known, 0 fixed" in out
    md = (run_dir / "summary.md").read_text()
    assert len(md.encode()) < 1024 * 1024
    root = ET.parse(run_dir / "junit.xml").getroot()
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert "campaign.decode" in names
    sigs = [n for n in names if n.startswith("finding.")]
    assert len(sigs) == 1 and len(list(root.iter("failure"))) == 1
    assert sigs[0].endswith("/decode/live") or "/decode/" in sigs[0], sigs
    for word in ("commit:", "versions:", "device:", "budget used:", "## Cases per scenario kind",
                 f"`{sigs[0][len('finding.'):]}`", "swafuzz repro findings/", "## Bundles"):
        assert word in md, word
    assert str(run_dir) not in md  # repro lines are relative to the run directory
    html = (run_dir / "summary.html").read_text()
    assert "<svg" in html and "expected (oracle)" in html and "actual (tape)" in html
    assert "<script" not in html.lower()


def test_report_baseline_and_reruns(run_dir, cli):
    code, out = cli("report", run_dir, "--baseline", run_dir, "--reruns", "2")
    assert code == 1 and "0 new, 1 known, 0 fixed" in out, out
    md = (run_dir / "summary.md").read_text()
    assert "2/2 reruns failed" in md and "| known" in md
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert [f.get("type") for f in root.iter("failure")] == ["known"]


def test_report_fixed_against_a_clean_run(run_dir, tmp_path, cli):
    clean = tmp_path / "clean"
    code, out = cli("run", "--examples", "1", "--quiet", "--impl", "torch", "--scenario",
                    "decode", "--no-isolate", "--out", clean)
    assert code == 0, out
    code, out = cli("report", clean, "--baseline", run_dir)
    assert code == 0 and "0 new, 0 known, 1 fixed" in out, out
    root = ET.parse(clean / "junit.xml").getroot()
    assert not list(root.iter("failure")) and root.get("failures") == "0"


@pytest.mark.parametrize("make,field", [
    (lambda d: str(d / "missing"), "DIR"),
    (lambda d: (d / "f.txt").write_text("x") and str(d / "f.txt"), "DIR"),
    (lambda d: str(d), "holds no run.json"),
])
def test_report_bad_dir_exit_2(tmp_path, capsys, make, field):
    assert main(["report", make(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "summary.md").exists()


def test_report_corrupt_bundle_and_bad_flags_exit_2(tmp_path, capsys):
    (tmp_path / "findings").mkdir()
    (tmp_path / "findings" / "x.json").write_text("{not json")
    assert main(["report", str(tmp_path)]) == 2
    assert "x.json: not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "summary.md").exists()
    assert main(["report", str(tmp_path), "--reruns", "-1"]) == 2
    assert "--reruns" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--baseline", str(tmp_path / "nope")]) == 2
    assert "--baseline" in capsys.readouterr().err


def screenshot(html_path, png_path, size="1000,900"):
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-quic", "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", f"--window-size={size}",
                            f"--screenshot={png_path}", f"file://{html_path}"],
                           capture_output=True, text=True, timeout=3600)
    assert os.path.exists(png_path), r.stderr[-2000:]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package "
                    "'chromium'; .ci/run installs it)")
def test_report_html_renders_in_headless_chromium(run_dir, tmp_path, cli):
    if not (run_dir / "summary.html").exists():
        assert cli("report", run_dir)[0] == 1
    png = tmp_path / "shot.png"
    screenshot(str(run_dir / "summary.html"), str(png), "800,700")
    counts = pixel_counts(str(png))
    total = sum(counts.values())
    white = counts.get(b"\xff\xff\xff", 0)
    assert total == 800 * 700
    assert total - white > 0.03 * total, "screenshot is (almost) blank"
    assert len(counts) > 20
    # the pool picture rendered: cells in the 'written, as expected' green
    assert counts.get(bytes([0x2E, 0x9D, 0x4F]), 0) > 50
