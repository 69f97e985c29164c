"""Feature record: Raw metadata: the metadata prepared inside the graph (prep_in_graph); its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='raw_metadata',
    title='Raw metadata: the metadata prepared inside the graph (prep_in_graph)',
    source='spec §4.2',
    kinds=(Kind('raw_metadata', '.kinds:raw_metadata_cases', 'every forward with Raw metadata'),),
    fields='.fields:FIELDS', engine=('swafuzz.targets.backend',), mutants=('.mutants',),
)
