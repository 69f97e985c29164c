"""Feature record: the per-request SWA ring (pool.swa_ring); its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='ring',
    title='the per-request SWA ring (pool.swa_ring)',
    source='addendum §2.1',
    kinds=(
        Kind(
            'ring',
            'swafuzz.features.ring.kinds:ring_strategy',
            'decode / verify / draft-extend / IDLE / DP forwards on a ring, slot churn',
        ),
    ),
    fields='swafuzz.features.ring.fields:FIELDS',
    validators=('swafuzz.features.ring.rules:validate',),
    oracle=('swafuzz.features.ring.oracle',),
    engine=('swafuzz.features.ring.engine',),
    sglang=('swafuzz.features.ring.sglang', 'swafuzz.features.ring.sglang_attrs'),
    mutants=('swafuzz.features.ring.mutants',),
    since={
        'sglang': Since('0.5.23', (
            'per-request SWA ring write rows on the DSV4 path '
            "(TargetHiddenKvInjector._ring_inject_loc; the allocator's ring accounting, "
            'swa_req_ring_size, is 0.5.20+)'
        )),
    },
    hooks={
        'sglang.facts': 'swafuzz.features.ring.sglang_facts:FACTS',
        'check.invariants': 'swafuzz.features.ring.checks:invariant_failures',
        'check.slot_owner': 'swafuzz.features.ring.checks:slot_owner',
        'check.skipped_loc': 'swafuzz.features.ring.checks:skipped_loc',
        'oracle.shadow': 'swafuzz.features.ring.oracle:make_shadow',
        'engine.uses_allocator': 'swafuzz.features.ring.rules:has_ring',
        'scenario.swa_buffer_pages': 'swafuzz.features.ring.rules:swa_buffer_pages',
        'engine.allocator': 'swafuzz.features.ring.engine:RingAllocator',
        'engine.store_rows': 'swafuzz.features.ring.engine:ring_rows',
        'engine.store_skip': 'swafuzz.features.ring.engine:skip_negative_rows',
        'sglang.allocator': 'swafuzz.features.ring.sglang:SGLangRingAllocator',
        'sglang.post_metadata_stamp': 'swafuzz.features.ring.sglang:stamp_ring_rows',
        'sglang.real_pool': 'swafuzz.features.ring.sglang_attrs:real_pool_attrs',
    },
)
