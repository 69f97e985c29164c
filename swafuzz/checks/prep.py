"""The ``prepared`` check (issue 18, item 6): the metadata a forward's preparation built, compared
exactly with the Case before any store reads it (a wrong metadata the stores never read passes
them: the resolver falls back to a live translation, spec §4.5). Reads ``ForwardObs.prepared``
(after the eager init, or after a replay's out-graph prep), per forward:

* ``out_loc`` (``raw_out_loc``): real rows are ``ForwardExp.full_locs`` (or ``prep_locs`` where
  the metadata covers more rows than written: a multi-step draft decode), the rest 0 (spec §4.4);
* ``seq_lens`` (under a graph the runner's static buffer): the request lengths after the step's
  allocation, padded requests the fill value 1 (spec §5.1);
* ``positions``: the real rows' token positions (padded rows not judged: a draft-extend bucket
  keeps a longer replay's positions);
* ``swa_loc`` (the stamped ``swa_out_cache_loc``): real rows ``M[loc]``, the rest the padding
  target (0 or ``pad_cycle``), as ``write_targets`` expects.

Whether a preparation stamps is the path's and release's choice (a graph's out-graph prep assigns
None, spec §4.2; 0.5.23's draft-extend prep stamps its buffer or an eager-miss translation): a
missing stamp is not judged, a present one is. An eager MTP IDLE keeps the previous metadata (spec
§4.3) and records nothing. ``loc_buffer`` is the draft-extend buffer's own check's.
"""

from __future__ import annotations

from swafuzz.checks.base import Failure, fwd_name, pair_by_forward
from swafuzz.checks.registry import check


def _compare(got: list[int], real: list[int], pad) -> tuple[int, int, str] | None:
    """The first row where ``got`` differs from ``real`` followed by padding (``pad(k)`` for
    padded row k), as ``(row, expected, what was there)``; ``(len(got), real[len(got)],
    "missing")`` when ``got`` is shorter than the real rows; None when they agree."""
    for r, v in enumerate(got):
        want = real[r] if r < len(real) else pad(r - len(real))
        if v != want:
            return r, want, str(v)
    if len(got) < len(real):
        return len(got), real[len(got)], "missing"
    return None


def prepared_failures(o, e) -> list[Failure]:
    """The ``prepared`` failures of one (observed, expected) forward pair."""
    prep = o.prepared
    fails = []
    if "out_loc" in prep:
        real = e.prep_locs if e.prep_locs is not None else e.full_locs
        bad = _compare(prep["out_loc"], list(real), lambda k: 0)
        if bad is not None:
            r, want, shown = bad
            role = "real" if r < len(real) else "padded"
            fails.append(Failure(
                "prepared", f"{fwd_name(o)}: the prepared full locations (raw_out_loc, "
                f"{len(prep['out_loc'])} rows) differ from the Case's {len(real)} rows; first: "
                f"row {r} ({role}) expected full loc {want}, got {shown}", "out-loc", o.step,
                o.fwd))
    if "seq_lens" in prep and e.seq_lens is not None:
        bad = _compare(prep["seq_lens"], list(e.seq_lens), lambda k: 1)
        if bad is not None:
            r, want, shown = bad
            role = "real" if r < len(e.seq_lens) else "padded"
            fails.append(Failure(
                "prepared", f"{fwd_name(o)}: the prepared seq_lens ({len(prep['seq_lens'])} "
                f"requests) differ from the Case's {len(e.seq_lens)}; first: request {r} "
                f"({role}) expected {want}, got {shown}", "seq-lens", o.step, o.fwd))
    if "positions" in prep and e.positions is not None:
        real = list(e.positions)
        bad = _compare(prep["positions"][:len(real)], real, lambda k: 0)
        if bad is not None:
            r, want, shown = bad
            fails.append(Failure(
                "prepared", f"{fwd_name(o)}: the prepared positions differ from the Case's "
                f"{len(real)} rows; first: row {r} (real) expected position {want}, got {shown}",
                "positions", o.step, o.fwd))
    if "swa_loc" in prep:
        cyc = tuple(getattr(e, "pad_cycle", ()) or (0,))
        bad = _compare(prep["swa_loc"], list(e.targets), lambda k: cyc[k % len(cyc)])
        if bad is not None:
            r, want, shown = bad
            role = "real" if r < e.n_real else "padded"
            fails.append(Failure(
                "prepared", f"{fwd_name(o)}: the stamped SWA locations (swa_out_cache_loc, "
                f"{len(prep['swa_loc'])} rows) differ from the oracle's; first: row {r} "
                f"({role}) expected SWA slot {want}, got {shown}", "swa-loc", o.step, o.fwd))
    return fails


@check("prepared")
def check_prepared(case, obs, exp) -> list[Failure]:
    """Each forward's prepared metadata equals the Case's (module docstring). Only killer of
    ``draft_extend_prep_drops_live_loc`` (PR #27091 review, spec §9.1), ``graph_swa_loc_kept``
    (spec §4.2, §9.12) and ``graph_pad_seq_lens_stale`` (spec §5.1)."""
    pairs, _, _ = pair_by_forward(obs.forwards, exp.forwards, obs.error)
    fails: list[Failure] = []
    for o, e in pairs:
        fails += prepared_failures(o, e)
        if fails:
            break  # the first forward that differs; later ones usually follow from it
    return fails
