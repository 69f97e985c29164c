"""Which SGLang releases ``scripts/upstream-ci`` checks on a commit (docs/CI.md, "Upstream
releases per commit"): the two ends of the range, one middle release chosen from the commit (so
every release comes round), and the releases of the families a change touches, bounded.

    python -m swafuzz.targets.sglang.ci_releases [--commit SHA] [--changed PATH ...]
        [--max-extra N]     # prints why on stderr, the releases on stdout (one line)
    python -m swafuzz.targets.sglang.ci_releases --git   # commit and changes from git

A *family* is a run of releases the adapter drives alike: the same recorded probe
(:mod:`.detected`: adapter family and seams) and the same real/modelled column
(:func:`.matrix.answer`, which the features' ``sglang_facts.json`` feed). Touched families:

* a check (``swafuzz/checks/``), the core seam (``swafuzz/targets/sglang/``, this module
  excepted) or ``scripts/upstream-check`` / ``scripts/upstream-env``: every family;
* a feature's sglang seam (a file under ``swafuzz/features/F/`` whose name starts ``sglang``):
  the families where one of F's table rows (its nearest ``sglang_facts.json``) is ``real``;
  a feature's checks (``checks.py``, ``checks/``): where one is ``real`` or ``modelled``.

Each touched family not already run (an end or the middle) adds its release picked from the
commit, the families in turn from the commit, at most ``max_extra`` releases besides the ends
(the middle included); the rest are printed as left to the nightly matrix. Reads no SGLang.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import swafuzz.targets.sglang as sg
from swafuzz.targets.sglang import TABLE, matrix
from swafuzz.targets.sglang.releases import release_key

ENDS = ("0.5.12", "0.5.23")
#: releases besides the two ends per run (the middle one and touched families'), CI's budget
MAX_EXTRA = 2
FEATURES = "swafuzz/features/"
ALL_FAMILIES = ("swafuzz/checks/", "swafuzz/targets/sglang/", "scripts/upstream-check",
                "scripts/upstream-env")
SELF = "swafuzz/targets/sglang/ci_releases.py"


def releases() -> list[str]:
    """Every release and post-release with a recorded probe, oldest first."""
    return sorted(sg.DETECTED, key=release_key)


#: the oldest release CI rotates through: every release between the ends. Each passed
#: ``scripts/upstream-check`` (CI's sizes) on 2026-12-03; the server level refuses 0.5.13
#: (the graph runner's buffers) and 0.5.14 (the early runtime context) by name, and runs on
#: 0.5.12.post1 and 0.5.15 .. 0.5.22
ROTATION_FIRST = "0.5.12.post1"


def middles() -> list[str]:
    """The releases strictly between the two ends that CI rotates through (from
    :data:`ROTATION_FIRST`)."""
    return [v for v in releases() if v not in ENDS
            and release_key(v) >= release_key(ROTATION_FIRST)]


def _key(v: str) -> tuple:
    rec = sg.DETECTED[v]
    return (rec.get("family"), tuple(sorted((rec.get("found") or {}).items())),
            tuple(matrix.answer(row[0], v) for row in TABLE))


def families() -> list[list[str]]:
    """The releases in runs of the same probe and real/modelled column, oldest first."""
    out: list[list[str]] = []
    last = None
    for v in releases():
        k = _key(v)
        if out and k == last:
            out[-1].append(v)
        else:
            out.append([v])
        last = k
    return out


def family_name(fam: list[str]) -> str:
    return fam[0] if len(fam) == 1 else f"{fam[0]}..{fam[-1]}"


def _facts_rows(path: str) -> list[str] | None:
    """The table components of the nearest ``sglang_facts.json`` above ``path`` inside its
    feature (None: the feature has none)."""
    d = os.path.dirname(path)
    while d.startswith(FEATURES.rstrip("/")) and len(d) > len(FEATURES.rstrip("/")):
        f = os.path.join(sg_root(), d, "sglang_facts.json")
        if os.path.exists(f):
            return [row[0] for row in json.load(open(f, encoding="utf-8")).get("table", [])]
        d = os.path.dirname(d)
    return None


def sg_root() -> str:
    """The checkout's root (the directory holding ``swafuzz/``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))


def touched(path: str) -> tuple[set[str], str] | None:
    """``(releases, why)`` a changed ``path`` (repository-relative) touches, None: none."""
    every = set(releases())
    if path == SELF:
        return None
    if path.startswith(ALL_FAMILIES):
        return every, "a check, the core sglang seam or the release check itself: every family"
    if not path.startswith(FEATURES):
        return None
    name = os.path.basename(path)
    parts = path.split("/")
    seam = name.startswith("sglang")
    check = name == "checks.py" or "checks" in parts[2:-1]
    if not (seam or check):
        return None
    rows = _facts_rows(path)
    feature = "/".join(parts[2:-1])
    if rows is None or not feature:
        return every, f"feature {feature}: no sglang_facts.json, every family"
    ok = {"real"} if seam else {"real", "modelled"}
    hit = {v for v in every if any(matrix.answer(c, v)[0] in ok for c in rows)}
    what = "sglang seam" if seam else "check"
    return hit, f"feature {feature} {what}: where its rows are {'/'.join(sorted(ok))}"


@dataclass
class Choice:
    releases: list[str]
    lines: list[str]


def choose(commit: str, changed: list[str], max_extra: int = MAX_EXTRA) -> Choice:
    """The releases to check on ``commit`` (40 hex digits) given the ``changed`` paths."""
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}", commit):
        raise ValueError(f"--commit: {commit!r} is not a git commit id (7 to 40 hex digits)")
    h = int(commit, 16)
    mids = middles()
    mid = mids[h % len(mids)]
    lines = [f"ends: {' '.join(ENDS)}",
             f"middle: {mid} (commit {commit[:12]}: int(commit, 16) % {len(mids)} = "
             f"{h % len(mids)} in the middle releases {mids[0]} .. {mids[-1]})"]
    chosen = [*ENDS, mid]
    hits: set[str] = set()
    for p in changed:
        t = touched(p)
        if t:
            hits |= t[0]
            lines.append(f"changed {p}: {t[1]}")
    rotating = set(middles())
    older = [family_name(f) for f in families() if set(f) & hits and not set(f) & rotating
             and not set(f) & set(chosen)]
    if older:
        lines.append(f"touched, left to the nightly matrix (before {ROTATION_FIRST}): "
                     + ", ".join(older))
    fams = [f for f in families() if set(f) & hits & rotating and not set(f) & set(chosen)]
    if fams:
        start = h % len(fams)
        fams = fams[start:] + fams[:start]  # the families in turn, from the commit
    extra = max(0, max_extra - 1)
    for fam in fams[:extra]:
        members = [v for v in fam if v in hits and v in rotating]
        v = members[h % len(members)]
        chosen.append(v)
        lines.append(f"touched family {family_name(fam)}: {v}")
    if fams[extra:]:
        lines.append("touched, left to the nightly matrix (at most "
                     f"{max_extra} releases besides the ends): "
                     + ", ".join(family_name(f) for f in fams[extra:]))
    if max_extra < 1:
        chosen.remove(mid)
        lines[1] += " - not run (max extra 0)"
    return Choice(sorted(chosen, key=release_key), lines)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True,
                          cwd=sg_root()).stdout.strip()


def git_inputs() -> tuple[str, list[str], str]:
    """``(commit, changed paths, what they were diffed against)``: HEAD, and the paths changed
    since the merge base with ``main`` (``origin/main``) when HEAD is not on it, else since the
    previous commit, plus the working tree's."""
    head = _git("rev-parse", "HEAD")
    base, against = None, "the previous commit"
    for ref in ("origin/main", "main"):
        try:
            mb = _git("merge-base", "HEAD", ref)
        except subprocess.CalledProcessError:
            continue
        if mb != head:
            base, against = mb, f"the merge base with {ref} ({mb[:12]})"
        break
    if base is None:
        try:
            base = _git("rev-parse", "HEAD~1")
        except subprocess.CalledProcessError:
            base, against = head, "nothing (a root commit)"
    changed = set(_git("diff", "--name-only", base, "HEAD").splitlines())
    changed |= set(_git("diff", "--name-only", "HEAD").splitlines())
    return head, sorted(p for p in changed if p), against


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m swafuzz.targets.sglang.ci_releases")
    p.add_argument("--git", action="store_true", help="commit and changed paths from git")
    p.add_argument("--commit", help="the commit id the middle release is chosen from")
    p.add_argument("--changed", nargs="*", default=[], help="changed paths (repository-relative)")
    p.add_argument("--max-extra", type=int, default=MAX_EXTRA,
                   help=f"releases besides the ends (default {MAX_EXTRA})")
    a = p.parse_args(argv)
    if a.max_extra < 0:
        print(f"error: --max-extra: {a.max_extra} (allowed: 0 or more)", file=sys.stderr)
        return 2
    changed = list(a.changed)
    if a.git:
        try:
            commit, from_git, against = git_inputs()
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"error: git failed ({e}); set SWAFUZZ_UPSTREAM_RELEASES instead",
                  file=sys.stderr)
            return 3
        commit = a.commit or commit
        changed += from_git
        print(f"ci-releases: {len(from_git)} paths changed against {against}", file=sys.stderr)
    elif a.commit is None:
        print("error: --commit or --git is required", file=sys.stderr)
        return 2
    else:
        commit = a.commit
    try:
        c = choose(commit, changed, a.max_extra)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in c.lines:
        print(f"ci-releases: {line}", file=sys.stderr)
    print(" ".join(c.releases))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
