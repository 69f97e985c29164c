"""issue12-w5 on the ``sglang`` target (0.5.23): the window_dp_extend classification and the
``history`` check on the release's own window.

* The release's eager EXTEND with padding rows under a request window joins them to the last
  real run (ledger entries ``window-dp-extend-pad-joins-run`` and
  ``window-dp-decode-extend-pad-joins-run``, bundles in ``tests/data/bundles/sglang/``,
  classification in docs/notes/issue12-w5.md): the bundles replay, and a ``window_dp_extend``
  campaign's finding is classified known (ledger exit 0).
* The ``history`` check reads the release's ``RequestWindow.tags`` at the history rows it
  copied: clean on the window kinds the adapter drives.

Marker ``upstream``. Reproduce: ``$(scripts/upstream-env 0.5.23) -m pytest
tests/features/request_window/test_sglang_w5.py``.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
from hypothesis import given, settings

from swafuzz import features
from swafuzz.harness.pipeline.execute import execute

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tests.features.request_window.test_w5_history import SEPARATE  # noqa: E402

pytestmark = [pytest.mark.upstream, pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="sglang is not installed")]


def _only_0_5_23():
    from swafuzz.targets import sglang as sg

    if sg.release()[1] != "0.5.23":
        pytest.skip("the request window exists from 0.5.21; adapter 0.5.23 only")


@pytest.mark.parametrize("entry", ["window-dp-extend-pad-joins-run",
                                   "window-dp-decode-extend-pad-joins-run"])
def test_ledger_window_dp_extend_findings_replay(entry):
    """The ledger entries' repro bundles fail on the release with their signature, the history
    check sees the lost history too (W5), and unified is clean on them."""
    _only_0_5_23()
    from swafuzz.harness.ledger import entries as ledger
    from swafuzz.reports.bundle import read_bundle
    from swafuzz.scenarios.case import Case

    e = next(x for x in ledger.load_ledger(ledger.DEFAULT_LEDGER) if x.id == entry)
    b = read_bundle(os.path.join(ROOT, e.repro))
    case = Case.from_json(b["case"])
    v = execute(case, "sglang", "torch", ["eager", "tape"])
    assert v.failed and v.signature() == b["signature"] == "window/window_dp_extend/workspace"
    assert e.matches(b, "0.5.23")
    assert any(f.check == "history" and "stands for position 0, its source row's tag says -1"
               in f.message for f in v.failures), [f.message for f in v.failures]
    assert not execute(case, "unified", "torch", ["eager", "tape"]).failed


def test_campaign_finding_is_known_and_exits_0(tmp_path, capsys):
    """A short window_dp_extend campaign on 0.5.23 meets the padding join: the run (which
    consults the ledger, --ledger auto) reports it KNOWN and exits 0, and the ledger CLI over
    its findings (what scripts/upstream-check runs) classifies every finding known (exit 0)."""
    _only_0_5_23()
    from swafuzz.harness.cli.commands import main
    from swafuzz.harness.ledger import entries as ledger

    out = str(tmp_path / "run")
    rc = main(["run", "--target", "sglang", "--impl", "torch", "--scenario", "window_dp_extend",
               "--examples", "8", "--workers", "1", "--out", out, "--quiet"])
    text = capsys.readouterr()
    assert rc == 0, text.out + text.err
    assert "KNOWN" in text.out and "window-dp-extend-pad-joins-run" in text.out, text.out
    assert ledger.main([out, "--target", "sglang", "--release", "0.5.23"]) == 0


def test_entries_do_not_cover_unpadded_or_tail_steps():
    """The ``when`` predicates: a window pool without a tail, the padded step's op."""
    import copy

    from swafuzz.harness.ledger import entries as ledger
    from swafuzz.reports.bundle import read_bundle

    es = {e.id: e for e in ledger.load_ledger(ledger.DEFAULT_LEDGER)}
    e, d = es["window-dp-extend-pad-joins-run"], es["window-dp-decode-extend-pad-joins-run"]
    b = read_bundle(os.path.join(ROOT, e.repro))
    assert e.matches(b, "0.5.23") and not d.matches(b, "0.5.23")
    assert not e.matches(b, "0.5.12")
    plain = copy.deepcopy(b)
    del plain["case"]["steps"][1]["rank_tokens"]  # no padding
    assert not e.matches(plain, "0.5.23")
    paged = copy.deepcopy(b)
    paged["case"]["pool"]["request_window"] = 0
    assert not e.matches(paged, "0.5.23")
    other = dict(b, signature="contracts/window_dp_extend/workspace")
    assert not e.matches(other, "0.5.23")


def test_history_observed_on_the_release_window():
    """SEPARATE (a separate replay forward, then the extend reading the replayed rows as
    history): the release's tags at use are recorded and equal the Case's positions."""
    _only_0_5_23()
    from swafuzz.features.request_window.history_checks import check_history
    from swafuzz.oracles.engine import expect
    from swafuzz.targets.sglang.engine import SGLangEngine

    obs = SGLangEngine(SEPARATE).run()
    assert obs.error is None, obs.error
    exp = expect(SEPARATE)
    assert any(f.history_tags and any(t >= 0 for layer in f.history_tags for t in layer)
               for f in obs.channel("request_window").forwards)
    assert check_history(SEPARATE, obs, exp) == []


@pytest.mark.parametrize("kind", ["request_window", "replay_separate", "dspark_verify"])
def test_history_clean_on_release(kind):
    _only_0_5_23()

    @settings(max_examples=6, database=None, deadline=None)
    @given(features.strategy(kind)())
    def prop(case):
        v = execute(case, "sglang", "torch", ["eager"])
        assert not v.failures, [f.message for f in v.failures]

    prop()
