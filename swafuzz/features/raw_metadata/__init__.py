"""Feature record: Raw metadata: the metadata prepared inside the graph (prep_in_graph).

Semantics: ``swafuzz/features/raw_metadata/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='raw_metadata',
    title='Raw metadata: the metadata prepared inside the graph (prep_in_graph)',
    source='spec §4.2',
    kinds=(
        Kind('raw_metadata', 'swafuzz.features.raw_metadata.kinds:raw_metadata_cases',
             'every forward with Raw metadata'),
    ),
    case_fields=('graph.prep_in_graph',),
    oracle=(),
    engine=('swafuzz.targets.backend',),
    sglang=(),
    checks=(),
    mutants=('swafuzz.features.raw_metadata.mutants',),
    since={},
    semantics='swafuzz/features/raw_metadata/SEMANTICS.md',
)
