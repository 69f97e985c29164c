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
    hooks={
        'check.part': 'swafuzz.features.ring.checks:RingChecks',
        'oracle.part': 'swafuzz.features.ring.oracle:RingOracle',
        'scenario.part': 'swafuzz.features.ring.rules:RingScenario',
        'engine.part': 'swafuzz.features.ring.engine:RingEngine',
        'sglang.part': 'swafuzz.features.ring.engine:RingSGLang',
        'sglang.facts': 'swafuzz.features.ring.sglang_facts:FACTS',
    },
)
