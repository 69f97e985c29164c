"""Feature record: the draft-extend graph's pre-allocated SWA location buffer; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='draft_extend_buffer',
    title="the draft-extend graph's pre-allocated SWA location buffer",
    source='PR #34890, spec §9.17',
    kinds=(Kind('draft_extend_buffer', '.kinds:draft_extend_buffer_cases',
                'draft-extend graphs with the pre-allocated buffer'),),
    fields='.fields:FIELDS', mutants=('.mutants',),
    engine=('.engine', 'swafuzz.targets.backend'), sglang=('swafuzz.targets.sglang.metadata',),
    checks=('loc_buffer',), check_modules=('.checks',),
    hooks={'engine.part': '.engine:DraftExtendBufferEngine', 'sglang.facts': '.sglang_facts:FACTS'},
)
