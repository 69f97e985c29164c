"""The server's own state changes in the engine oracle (plain Python; hook ``oracle.step_ops``):
``flush`` and ``refused_admit`` on :class:`~swafuzz.oracles.shadow.Shadow`
(``features/server_ops/SEMANTICS.md``)."""

from __future__ import annotations

from swafuzz.oracles.errors import CaseInfeasible


def shadow_flush(sh, i: int, s, ex: str) -> None:
    """Refused (nothing changes) while a request is live; else every page free on both sides
    and ``M[:-1] = 0``; pool bytes stay."""
    if sh.tokens:
        return
    sh.free_full = set(range(1, sh.cfg.full_pages + 1))
    sh.free_swa = set(range(1, sh.cfg.swa_pages + 1))
    sh.M[:-1] = [0] * (len(sh.M) - 1)
    sh.reserved.clear()


def fresh_pages(length: int, page_size: int) -> int:
    """The pages a new request of ``length`` tokens opens on each side."""
    return -(-length // page_size)


def shadow_refused_admit(sh, i: int, s, ex: str) -> None:
    """The premise (a new request whose pages fit the free full pages but not the free SWA
    pages) is checked; the expected outcome is the refusal: nothing changes."""
    if s.rid is None or s.length is None or s.length < 1:
        raise CaseInfeasible(i, "refused_admit needs rid and length >= 1")
    if s.rid in sh.ever:
        raise CaseInfeasible(i, f"refused_admit: request {s.rid} was admitted before")
    need = fresh_pages(s.length, sh.P)
    if not len(sh.free_swa) < need <= len(sh.free_full):
        raise CaseInfeasible(i, f"refused_admit of {s.length} tokens needs {need} fresh pages "
                                f"per side: it must fit the {len(sh.free_full)} free full pages "
                                f"but not the {len(sh.free_swa)} free SWA pages")
    sh.ever.add(s.rid)


STEP_OPS = {"flush": shadow_flush, "refused_admit": shadow_refused_admit}
