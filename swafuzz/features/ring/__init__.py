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
    sglang=('swafuzz.features.ring.sglang',),
    mutants=('swafuzz.features.ring.mutants',),
    since={
        'sglang': Since('0.5.23', (
            'per-request SWA ring write rows on the DSV4 path '
            "(TargetHiddenKvInjector._ring_inject_loc; the allocator's ring accounting, "
            'swa_req_ring_size, is 0.5.20+)'
        )),
    },
    semantics='swafuzz/features/ring/SEMANTICS.md',
    hooks={
        'sglang.facts': 'swafuzz.features.ring.sglang_facts:FACTS',
        'check.invariants': 'swafuzz.features.ring.checks:invariant_failures',
        'oracle.shadow': 'swafuzz.features.ring.oracle:make_shadow',
        'engine.ring_allocator': 'swafuzz.features.ring.engine:RingAllocator',
        'engine.ring_rows': 'swafuzz.features.ring.engine:ring_rows',
        'engine.ring_skip': 'swafuzz.features.ring.engine:skip_negative_rows',
        'sglang.ring_allocator': 'swafuzz.features.ring.sglang:SGLangRingAllocator',
        'sglang.ring_stamp': 'swafuzz.features.ring.sglang:stamp_ring_rows',
    },
)
