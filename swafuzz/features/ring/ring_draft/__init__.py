"""Feature record: the DSpark draft block on a per-request SWA ring; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='ring_draft', source='addendum (issue12-ringdraft)',
    title='the DSpark draft block on a per-request SWA ring',
    kinds=(Kind('ring_draft', '.kinds:ring_draft_strategy',
                'draft_block steps on a ring, eager and graph'),),
    validators=('.rules:validate',), oracle=('.oracle',), engine=('.engine',),
    sglang=('.sglang',), mutants=('.mutants',),
    since={'sglang': Since('0.5.23', 'DSpark draft block on a per-request SWA ring')},
    hooks={'engine.part': '.engine:RingDraftEngine', 'sglang.part': '.engine:RingDraftSGLang'},
)
