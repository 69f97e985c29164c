"""The ``ring`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


def probe(found) -> dict:
    """The per-request SWA ring: the allocator's ring accounting and the DSpark injector's ring
    write rows."""
    ring_allocator = hasattr(found.SWATokenToKVPoolAllocator, "swa_req_ring")
    inject = found.first_module("sglang.srt.speculative.dspark_components.dspark_kv_inject")
    ring_inject = inject is not None and hasattr(
        getattr(inject, "TargetHiddenKvInjector", None), "_ring_inject_loc")
    return {
        "RING_ALLOCATOR": ring_allocator,
        "RING_INJECT": ring_inject,
        #: what a ring Case needs and the release lacks (empty: ring Cases run)
        "RING_MISSING": tuple(w for w, ok in (
            ("SWATokenToKVPoolAllocator.swa_req_ring (ring accounting)", ring_allocator),
            ("dspark_kv_inject.TargetHiddenKvInjector._ring_inject_loc", ring_inject)) if not ok),
    }


def refusal(case, found) -> str | None:
    if case.pool.swa_ring and found.RING_MISSING:
        return (f"sglang {found.VERSION} has no per-request SWA ring (lacks "
                f"{'; '.join(found.RING_MISSING)}); a Case with pool.swa_ring > 0 needs a release "
                "with it")
    return None


def describe(found) -> list[tuple[str, str]]:
    return [("ring", "yes" if not found.RING_MISSING else "no: " + "; ".join(found.RING_MISSING))]


FACTS = SGLangFacts(probe=probe, refusal=refusal, describe=describe)
