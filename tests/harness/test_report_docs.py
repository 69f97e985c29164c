"""The README as a reader sees it (issue 19 defect 11): every code fence is closed (an opening
fence names its language, a closing one is bare, and no fence opens inside another), the report
screenshot and the guides it links exist, and the guide to reading a finding covers what a
bundle holds, the signature, the repro line and the ledger's classification.

``docs/STATUS.md`` (issue 25 item 9) states what holds now and where it is verified: at most
400 lines, every repository path it writes in backticks exists (so a moved or deleted test or
script shows up here, not months later), and it keeps the release-matrix markers that
``scripts/upstream-matrix`` writes its table between."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATUS_MAX_LINES = 400
#: what a repository path in STATUS.md starts with (anything else in backticks is code or a name)
PATH_PREFIXES = ("tests/", "swafuzz/", "scripts/", "docs/", "ledger/", "constraints/", "lint/",
                 ".ci/")


def fences(text: str) -> list[str]:
    """Problems with the fences of a Markdown text: ``[]`` when every fence is closed."""
    problems, open_at = [], None
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s.startswith("```"):
            continue
        if open_at is None:
            if s == "```":
                problems.append(f"line {n}: a bare fence opens a block (name its language)")
            open_at = n
        elif s == "```":
            open_at = None
        else:
            problems.append(f"line {n}: {s!r} opens a block inside the one opened at line "
                            f"{open_at} (never closed)")
            open_at = n
    if open_at is not None:
        problems.append(f"line {open_at}: a block is never closed")
    return problems


def test_fence_checker_finds_an_unclosed_block():
    assert fences("```sh\na\n```\n") == []
    assert fences("```sh\na\nprose\n```sh\nb\n```\n") != []
    assert fences("```sh\na\n") != []


def test_readme_fences_are_closed():
    assert fences((ROOT / "README.md").read_text()) == []


def test_readme_links_the_screenshot_and_the_guides():
    text = (ROOT / "README.md").read_text()
    assert "(docs/report-screenshot.png)" in text
    assert (ROOT / "docs" / "report-screenshot.png").stat().st_size > 10_000
    assert "docs/READING-A-FINDING.md" in text and "docs/CI.md" in text
    for doc in re.findall(r"\]\((docs/[^)#]+)\)", text):
        if doc != "docs/CI.md":  # written by the CI-workflow change, linked from here
            assert (ROOT / doc).exists(), doc


def test_reading_a_finding_covers_the_bundle_signature_repro_and_ledger():
    text = (ROOT / "docs" / "READING-A-FINDING.md").read_text()
    assert fences(text) == []
    for word in ("signature", "swafuzz repro findings/", "ledger_entry", "known (ledger:",
                 "failures", "observed", "steps", "summary.html", "junit.xml",
                 ".known-", "case #"):
        assert word in text, word


def status_problems(text: str, root: Path) -> list[str]:
    """Problems with a status document under repository ``root``: more than
    ``STATUS_MAX_LINES`` lines, or a path written in backticks (a word of the span starting
    with one of ``PATH_PREFIXES``; ``::test`` and trailing punctuation cut, globs matched) that
    is not in the repository. ``[]`` when it holds."""
    problems = []
    lines = len(text.splitlines())
    if lines > STATUS_MAX_LINES:
        problems.append(f"{lines} lines (at most {STATUS_MAX_LINES}: history stays in git)")
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            path = word.split("::", 1)[0].lstrip("(").rstrip(".,;:)")
            if not path.startswith(PATH_PREFIXES):
                continue
            found = any(root.glob(path)) if any(c in path for c in "*?[") else (
                root / path).exists()
            if not found:
                problems.append(f"`{span}`: {path} is not in the repository")
    return problems


def test_status_checker_finds_a_stale_path_and_a_long_file(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    fine = ("`tests/test_a.py::test_x` (`pytest tests/test_a.py`), `tests/test_*.py`, "
            "`tests/`, `python -m swafuzz list`, `OUT/matrix/x.json`\n")
    assert status_problems(fine, tmp_path) == []
    bad = status_problems("run `pytest tests/test_gone.py -x`, then `scripts/nope`.\n"
                          "`tests/test_b*.py`\n", tmp_path)
    assert [p.split(": ")[1] for p in bad] == [
        "tests/test_gone.py is not in the repository", "scripts/nope is not in the repository",
        "tests/test_b*.py is not in the repository"], bad
    assert status_problems("x\n" * STATUS_MAX_LINES, tmp_path) == []
    assert status_problems("x\n" * (STATUS_MAX_LINES + 1), tmp_path) == [
        f"{STATUS_MAX_LINES + 1} lines (at most {STATUS_MAX_LINES}: history stays in git)"]


def test_status_is_short_and_names_only_paths_that_exist():
    text = (ROOT / "docs" / "STATUS.md").read_text()
    assert status_problems(text, ROOT) == []
    from swafuzz.targets.sglang.releases import BEGIN, END

    assert text.count(BEGIN) == 1 and text.count(END) == 1, "the release-matrix markers"
    assert fences(text) == []
