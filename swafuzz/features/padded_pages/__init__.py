"""Feature record: SWA pages with a padded stride, the pads as canaries; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='padded_pages', source='spec §4.6',
    title='SWA pages with a padded stride, the pads as canaries',
    kinds=(Kind('padded_pages', '.kinds:padded_pages_cases', 'pools whose page stride has a pad'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), mutants=('.mutants',),
    engine=('swafuzz.targets.kv_pool',),
)
