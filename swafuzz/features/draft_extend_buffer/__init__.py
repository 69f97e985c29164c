"""Feature record: the draft-extend graph's pre-allocated SWA location buffer; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='draft_extend_buffer',
    title="the draft-extend graph's pre-allocated SWA location buffer",
    source='PR #34890, spec §9.17',
    kinds=(
        Kind(
            'draft_extend_buffer',
            'swafuzz.features.draft_extend_buffer.kinds:draft_extend_buffer_cases',
            'draft-extend graphs with the pre-allocated buffer',
        ),
    ),
    fields='swafuzz.features.draft_extend_buffer.fields:FIELDS',
    engine=('swafuzz.features.draft_extend_buffer.engine', 'swafuzz.targets.backend'),
    sglang=('swafuzz.targets.sglang.metadata',),
    checks=('loc_buffer',),
    check_modules=('swafuzz.features.draft_extend_buffer.checks',),
    mutants=('swafuzz.features.draft_extend_buffer.mutants',),
    hooks={
        'engine.part': 'swafuzz.features.draft_extend_buffer.engine:DraftExtendBufferEngine',
        'sglang.facts': 'swafuzz.features.draft_extend_buffer.sglang_facts:FACTS',
    },
)
