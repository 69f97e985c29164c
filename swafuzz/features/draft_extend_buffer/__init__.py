"""Feature record: the draft-extend graph's pre-allocated SWA location buffer; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='draft_extend_buffer', source='PR #34890, spec §9.17',
    title="the draft-extend graph's pre-allocated SWA location buffer",
    kinds=(Kind('draft_extend_buffer', '.kinds:draft_extend_buffer_cases',
                'draft-extend graphs with the pre-allocated buffer'),),
    checks=('loc_buffer',), check_modules=('.checks',), fields='.fields:FIELDS',
    engine=('.engine', 'swafuzz.targets.backend'), sglang=('swafuzz.targets.sglang.metadata',),
    mutants=('.mutants',),
    hooks={'engine.part': '.engine:DraftExtendBufferEngine', 'sglang.facts': '.sglang_facts:FACTS'},
)
