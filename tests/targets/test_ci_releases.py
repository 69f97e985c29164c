"""The releases ``scripts/upstream-ci`` checks per commit
(:mod:`swafuzz.targets.sglang.ci_releases`): pure Python over the recorded probes, no SGLang."""

from __future__ import annotations

import pytest

from swafuzz.targets.sglang import ci_releases as ci
from swafuzz.targets.sglang.releases import release_key

SHA = "fcb3321b7cfe0000000000000000000000000000"


def _commit(i: int) -> str:
    return f"{i:040x}"


def test_the_ends_and_one_middle_release_per_commit():
    c = ci.choose(SHA, [])
    mids = ci.middles()
    assert c.releases == sorted([*ci.ENDS, mids[int(SHA, 16) % len(mids)]], key=release_key)
    assert ci.choose(SHA, []).releases == c.releases  # the same commit, the same choice
    assert any("middle:" in line and f"% {len(mids)}" in line for line in c.lines)


def test_every_middle_release_comes_round():
    mids = ci.middles()
    seen = {r for i in range(len(mids)) for r in ci.choose(_commit(i), []).releases}
    assert set(mids) <= seen
    assert "0.5.12" not in mids and "0.5.23" not in mids and ci.ROTATION_FIRST in mids


def test_families_partition_the_range_in_runs():
    fams = ci.families()
    flat = [v for f in fams for v in f]
    assert flat == ci.releases()
    names = {ci.family_name(f) for f in fams}
    # the draft-extend prep (0.5.18+) and free_full (0.5.19+) split the resolver releases
    assert {"0.5.17", "0.5.18", "0.5.19"} <= names
    assert ["0.5.12", "0.5.12.post1"] in fams


@pytest.mark.parametrize("path", ["docs/CI.md", "swafuzz/targets/sglang/ci_releases.py",
                                  "swafuzz/features/request_window/oracle.py", "tests/x.py"])
def test_paths_that_touch_no_family(path):
    assert ci.touched(path) is None


def test_a_check_or_the_core_seam_touches_every_family():
    for path in ("swafuzz/checks/prep.py", "swafuzz/targets/sglang/metadata.py",
                 "scripts/upstream-env"):
        hit, _ = ci.touched(path)
        assert hit == set(ci.releases())


def test_a_feature_seam_touches_the_releases_where_it_is_real():
    hit, why = ci.touched("swafuzz/features/request_window/sglang.py")
    assert min(hit, key=release_key) == "0.5.21" and "0.5.23" in hit and "sglang seam" in why
    hit, _ = ci.touched("swafuzz/features/draft_extend_buffer/sglang_facts.py")
    assert min(hit, key=release_key) == "0.5.18"
    # a feature's check: where its rows are real or modelled (the model runs the kind)
    hit, _ = ci.touched("swafuzz/features/draft_extend_buffer/checks.py")
    assert "0.5.12" in hit and "0.5.17" in hit


def test_touched_families_are_added_in_turn_within_the_bound():
    changed = ["swafuzz/checks/prep.py"]
    seen = set()
    for i in range(40):
        c = ci.choose(_commit(i), changed)
        assert len(c.releases) <= len(ci.ENDS) + ci.MAX_EXTRA
        seen |= set(c.releases)
        assert any("nightly matrix" in line for line in c.lines)
    # every family CI rotates through comes round (the older ones: the nightly matrix)
    rotating = [f for f in ci.families() if set(f) & set(ci.middles())]
    assert len({tuple(f) for f in rotating if set(f) & seen}) == len(rotating)
    wide = ci.choose(SHA, changed, max_extra=20)
    # unbounded: one release of each rotating family and the ends' (the middle's counted once)
    ends = [f for f in ci.families() if set(f) & set(ci.ENDS) and f not in rotating]
    assert sorted(tuple(f) for f in ci.families() if set(f) & set(wide.releases)) == \
        sorted(tuple(f) for f in rotating + ends)
    assert len(wide.releases) == len(rotating) + len(ends)
    older = [v for v in ci.releases() if v not in ci.ENDS
             and release_key(v) < release_key(ci.ROTATION_FIRST)]
    # the touched families before the rotation are named as the nightly matrix's, when any
    assert any(f"before {ci.ROTATION_FIRST}" in line for line in wide.lines) == bool(older)
    assert ci.choose(SHA, changed, max_extra=0).releases == list(ci.ENDS)


def test_a_touched_family_already_run_adds_nothing():
    # request_window's seam touches 0.5.21 .. 0.5.23: a commit whose middle is 0.5.21 or 0.5.22
    n = len(ci.middles())
    for i in range(n):
        c = ci.choose(_commit(i), ["swafuzz/features/request_window/sglang.py"])
        mid = ci.middles()[i % n]
        assert mid in c.releases and len(c.releases) <= 4


def test_bad_input_exits_2_naming_the_field(capsys):
    assert ci.main(["--commit", "xyz"]) == 2
    assert "--commit" in capsys.readouterr().err
    assert ci.main(["--commit", SHA, "--max-extra", "-1"]) == 2
    assert ci.main([]) == 2


def test_the_cli_prints_the_releases_and_why(capsys):
    assert ci.main(["--commit", SHA, "--changed", "swafuzz/checks/prep.py"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == ci.choose(SHA, ["swafuzz/checks/prep.py"]).releases
    assert "ci-releases: middle:" in err and "every family" in err
