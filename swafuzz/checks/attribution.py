"""Whose bytes and whose slot: the names the checks put in their messages (issue 10, item 6).

``attribute``: whose bytes one row is (poison, a padded row, or the step / forward / pool / layer
/ row of the payload with its request and position); ``slot_owner``: whose slot a wrong write hit
(dummy page, a live request's position, unmapped; ``loc_owner`` asks hook ``check.slot_owner``
first). Read-only over the Case and the Expectation; used by :mod:`checks.write`.
"""

from __future__ import annotations

from swafuzz import features
from swafuzz.oracles.paths import expected_paths
from swafuzz.oracles.shadow import slot_rows
from swafuzz.scenarios.case import POISON_BYTE


def attribute(case, exp, got: bytes) -> str:
    """Whose bytes ``got`` (one row) are: poison (never written), or which step / forward /
    pool / layer / row of the Case's payload (real row: with its request and position when the
    oracle knows them; padded row), or unknown."""
    if got == bytes([POISON_BYTE]) * len(got):
        return "poison: never written"
    rb = case.pool.row_bytes
    index = getattr(exp, "_row_index", None) if exp is not None else None
    if index is None:
        index = {}
        fwd_exp = {(e.step, e.fwd): e for e in getattr(exp, "forwards", [])}
        paths = {(p.step, p.fwd): p for p in expected_paths(case, False)}
        paths.update({(p.step, p.fwd): p for p in expected_paths(case, True)
                      if (p.step, p.fwd) in paths and p.rows > paths[(p.step, p.fwd)].rows})
        for (i, f), p in sorted(paths.items()):
            pool = "draft" if p.op in ("draft_extend", "draft_decode", "draft_block") else "target"
            n_layers = case.pool.draft_layers if pool == "draft" else case.pool.layers
            e = fwd_exp.get((i, f))
            for layer in range(n_layers):
                data = slot_rows(case, i, f, pool, layer, p.rows)
                for r in range(p.rows):
                    who = f"step {i} fwd {f} {pool} layer {layer} row {r}"
                    if r < p.n_real and e is not None and r < len(e.full_locs):
                        who += f" (real: full loc {e.full_locs[r]}{_owner(exp, i, e.full_locs[r])})"
                    elif r >= p.n_real:
                        who += " (padded row)"
                    index.setdefault(data[r * rb:(r + 1) * rb], who)
        if exp is not None:
            try:
                exp._row_index = index
            except AttributeError:
                pass
    return index.get(bytes(got), "bytes of no row of this Case")


def slot_owner(exp, step: int, swa: int, page_size: int) -> str:
    """Whose SWA slot ``swa`` is after ``step``, by the oracle's mapping: the dummy page, a live
    request's position, or an unmapped (free or evicted) slot."""
    if swa < 0:
        return "before the buffer"
    if swa < page_size:
        return "dummy page"
    try:
        m = exp.steps[step].mapping
        full = next((f for f, v in enumerate(m[:-1]) if v == swa), None)
    except (AttributeError, IndexError):
        return "owner unknown"
    if full is None:
        return "an unmapped slot: free or evicted"
    return f"the slot of full loc {full}{_owner(exp, step, full)}"


def loc_owner(case, exp, step: int, loc: int) -> str:
    """Whose slot the write location ``loc`` of ``step`` is: the answer of the first feature
    whose pool rules place it (slot ``CheckPart.slot_owner``), else :func:`slot_owner`."""
    who = features.first("check", "slot_owner", case, loc)
    return who if who is not None else slot_owner(exp, step, loc, case.pool.page_size)


def _owner(exp, step: int, full: int) -> str:
    try:
        for rid, (toks, _) in exp.steps[step].requests.items():
            if full in toks:
                return f", request {rid} position {toks.index(full)}"
    except (AttributeError, IndexError):
        pass
    return ""
