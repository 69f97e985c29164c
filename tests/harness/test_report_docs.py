"""The README as a reader sees it (issue 19 defect 11): every code fence is closed (an opening
fence names its language, a closing one is bare, and no fence opens inside another), the report
screenshot and the guides it links exist, and the guide to reading a finding covers what a
bundle holds, the signature, the repro line and the ledger's classification."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
