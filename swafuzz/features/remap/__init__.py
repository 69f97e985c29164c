"""Feature record: mapping re-registration (HiCache load-back) between forwards.

Semantics: ``swafuzz/features/remap/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='remap',
    title='mapping re-registration (HiCache load-back) between forwards',
    source='spec §2.8',
    kinds=(
        Kind('remap', 'swafuzz.features.remap.kinds:remap_cases',
             'register_mapping with a new tensor between decode forwards'),
    ),
    case_fields=(),
    oracle=(),
    engine=('swafuzz.targets.allocator',),
    sglang=(),
    checks=(),
    mutants=('swafuzz.features.remap.mutants',),
    since={},
    semantics='swafuzz/features/remap/SEMANTICS.md',
)
