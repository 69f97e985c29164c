"""Feature record: Raw metadata: the metadata prepared inside the graph (prep_in_graph); its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='raw_metadata', source='spec §4.2',
    title='Raw metadata: the metadata prepared inside the graph (prep_in_graph)',
    kinds=(Kind('raw_metadata', '.kinds:raw_metadata_cases', 'every forward with Raw metadata'),),
    fields='.fields:FIELDS', engine=('swafuzz.targets.backend',), mutants=('.mutants',),
)
