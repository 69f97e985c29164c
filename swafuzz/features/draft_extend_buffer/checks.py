"""The ``loc_buffer`` check (issue 18, item 6; sglang PR #34890, spec §4.7): the draft-extend
backend's SWA location buffer, as the refilling preparation left it, is the forward's write
targets ``M[loc]`` then 0 everywhere after. Recorded (``ForwardObs.prepared["loc_buffer"]``) when
the stamped ``swa_out_cache_loc`` is a view of it (the unified engine's graph draft-extends,
0.5.23's draft-extend prep whenever the locations fit); the stamp is the ``prepared`` check's.
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
