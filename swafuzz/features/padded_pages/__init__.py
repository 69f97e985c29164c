"""Feature record: SWA pages with a padded stride, the pads as canaries.

Semantics: ``swafuzz/features/padded_pages/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='padded_pages',
    title='SWA pages with a padded stride, the pads as canaries',
    source='spec §4.6',
    kinds=(
        Kind('padded_pages', 'swafuzz.features.padded_pages.kinds:padded_pages_cases',
             'pools whose page stride has a pad'),
    ),
    case_fields=('pool.page_pad_bytes',),
    validators=('swafuzz.features.padded_pages.rules:validate',),
    oracle=(),
    engine=('swafuzz.targets.kv_pool',),
    sglang=(),
    checks=(),
    mutants=('swafuzz.features.padded_pages.mutants',),
    since={},
    semantics='swafuzz/features/padded_pages/SEMANTICS.md',
)
