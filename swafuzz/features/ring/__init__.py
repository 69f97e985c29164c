"""Feature record: the per-request SWA ring (pool.swa_ring); its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='ring', source='addendum §2.1',
    title='the per-request SWA ring (pool.swa_ring)',
    kinds=(Kind('ring', '.kinds:ring_strategy',
                'decode / verify / draft-extend / IDLE / DP forwards on a ring, slot churn'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), oracle=('.oracle',),
    engine=('.engine',), sglang=('.sglang',), mutants=('.mutants',),
    since={'sglang': Since('0.5.23', (
        "per-request SWA ring write rows on the DSV4 path (TargetHiddenKvInjector._ring_inject_loc;"
        " the allocator's ring accounting, swa_req_ring_size, is 0.5.20+)"))},
    hooks={'check.part': '.checks:RingChecks', 'oracle.part': '.oracle:RingOracle',
           'scenario.part': '.rules:RingScenario', 'engine.part': '.engine:RingEngine',
           'sglang.part': '.engine:RingSGLang', 'sglang.facts': '.sglang_facts:FACTS'},
)
