"""The ``ring`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers, its probe of the installed release
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('ring: allocator accounting (pool.swa_ring > 0)',
     'absent', 'real',
     ('0.5.12 has no per-request SWA ring (swa_req_ring_size is 0.5.20+): ring Cases are refused '
      'there (swafuzz run --scenario ring: exit 2; a ring Case: TargetUnavailable). 0.5.23: '
      'SWATokenToKVPoolAllocator in ring mode around a DSV4 pool with swa_req_ring_size = '
      'pool.swa_ring and a real ReqToTokenPool (slot 0 padding, tail-first slots): alloc / '
      'alloc_extend / alloc_decode, free_swa (no-op), free_full, available_size, '
      'swa_available_size (features/ring/sglang.py)')),
    ('ring: write rows (swa_ring_rows, -1 window rule)',
     'absent', 'real',
     ('TargetHiddenKvInjector._ring_inject_loc (swa_ring_rows inside) stamped as swa_out_cache_loc'
      " after the release's in-graph op; its per-row state slot and final position come from the "
      "harness's slot/length tables (modelled stand-ins for req_pool_indices / seq_lens); which "
      'forwards stamp is modelled (upstream: DSpark draft blocks and the target-hidden injection)')),
    ('ring: resolver under a ring',
     'absent', 'real',
     ('get_swa_out_cache_loc as shipped: C returns the stamped rows, a miss falls to F '
      '(translation through M, never written under a ring); the -1 skip of the fused norm-rope '
      "store is modelled (swafuzz's store)")),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'ring: allocator accounting': (
        ('0.5.13', '0.5.19', 'absent',
         'swa_req_ring_size is 0.5.20+'),
        ('0.5.20', '0.5.22', 'absent',
         ("the allocator's ring accounting exists but nothing on the DSV4 path writes ring rows "
          '(no _ring_inject_loc / swa_ring_rows): ring Cases refused')),
    ),
    'ring: write rows': (
        ('0.5.13', '0.5.22', 'absent',
         'no _ring_inject_loc'),
    ),
    'ring: resolver under a ring': (
        ('0.5.13', '0.5.22', 'absent',
         'ring Cases refused'),
    ),
}


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


FACTS = SGLangFacts(table=TABLE, ranges=RANGES, probe=probe, refusal=refusal, describe=describe)
