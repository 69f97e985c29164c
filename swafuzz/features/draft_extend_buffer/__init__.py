"""Feature record: the draft-extend graph's pre-allocated SWA location buffer.

Semantics: ``swafuzz/features/draft_extend_buffer/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='draft_extend_buffer',
    title="the draft-extend graph's pre-allocated SWA location buffer",
    source='PR #34890, spec §9.17',
    kinds=(
        Kind('draft_extend_buffer', 'swafuzz.features.draft_extend_buffer.kinds:draft_extend_buffer_cases',
             'draft-extend graphs with the pre-allocated buffer'),
    ),
    case_fields=('graph.draft_extend_buffer',),
    oracle=(),
    engine=('swafuzz.targets.backend',),
    sglang=('swafuzz.targets.sglang.metadata',),
    checks=(),
    mutants=('swafuzz.features.draft_extend_buffer.mutants',),
    since={},
    semantics='swafuzz/features/draft_extend_buffer/SEMANTICS.md',
)
