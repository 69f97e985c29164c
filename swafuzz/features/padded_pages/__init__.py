"""Feature record: SWA pages with a padded stride, the pads as canaries; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='padded_pages',
    title='SWA pages with a padded stride, the pads as canaries',
    source='spec §4.6',
    kinds=(
        Kind(
            'padded_pages',
            'swafuzz.features.padded_pages.kinds:padded_pages_cases',
            'pools whose page stride has a pad',
        ),
    ),
    fields='swafuzz.features.padded_pages.fields:FIELDS',
    validators=('swafuzz.features.padded_pages.rules:validate',),
    engine=('swafuzz.targets.kv_pool',),
    mutants=('swafuzz.features.padded_pages.mutants',),
)
