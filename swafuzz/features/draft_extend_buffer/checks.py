"""The ``loc_buffer`` check (issue 18, item 6; sglang PR #34890, spec §4.7): the draft-extend
backend's pre-allocated SWA location buffer, as the preparation that refilled it left it, equals
what the Case determines: the forward's write targets ``M[loc]`` in front, 0 in every entry
after them (padded rows translate the padding location 0, and the refill zeroes the rest).

The target records the whole buffer (``ForwardObs.prepared["loc_buffer"]``) when the forward's
stamped ``swa_out_cache_loc`` is a view of it, i.e. the preparation refilled it: the unified
engine's graph draft-extends, and 0.5.23's draft-extend prep, graph or eager, whenever the
locations fit. The stamp itself is judged by the core ``prepared`` check.
"""

from __future__ import annotations

from swafuzz.checks.base import Failure, fwd_name, pair_by_forward
from swafuzz.checks.registry import check


@check("loc_buffer")
def check_loc_buffer(case, obs, exp) -> list[Failure]:
    """The refilled buffer is the forward's write targets, then zeros (module docstring).
    Only killer of ``draft_extend_buffer_tail_unzeroed`` (a refill of the bucket's rows that
    keeps the entries past them: 0.5.23 pads the live locations to the bucket before its
    refill, so no captured store reads those entries)."""
    pairs, _, _ = pair_by_forward(obs.forwards, exp.forwards, obs.error)
    for o, e in pairs:
        buf = o.prepared.get("loc_buffer")
        if buf is None:
            continue
        want = list(e.targets) + [0] * (len(buf) - len(e.targets))
        bad = [r for r, (a, b) in enumerate(zip(buf, want)) if a != b]
        if len(buf) < len(e.targets):
            return [Failure("loc_buffer", f"{fwd_name(o)}: the SWA location buffer has "
                            f"{len(buf)} entries for {len(e.targets)} real rows", "count",
                            o.step, o.fwd)]
        if bad:
            r = bad[0]
            role = "a real row's" if r < e.n_real else "past the real rows"
            return [Failure("loc_buffer", f"{fwd_name(o)}: {len(bad)} of {len(buf)} SWA "
                            f"location buffer entries differ after the refill; first: entry {r} "
                            f"({role}) expected {want[r]}, got {buf[r]}",
                            "buffer-real" if r < e.n_real else "buffer-tail", o.step, o.fwd)]
    return []
