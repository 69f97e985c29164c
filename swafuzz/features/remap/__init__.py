"""Feature record: mapping re-registration (HiCache load-back) between forwards; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='remap',
    title='mapping re-registration (HiCache load-back) between forwards',
    source='spec §2.8',
    kinds=(
        Kind(
            'remap',
            'swafuzz.features.remap.kinds:remap_cases',
            'register_mapping with a new tensor between decode forwards',
        ),
    ),
    engine=('swafuzz.targets.allocator', 'swafuzz.features.remap.engine'),
    mutants=('swafuzz.features.remap.mutants',),
    hooks={
        'scenario.step_ops': 'swafuzz.features.remap.fields:OPS',
        'engine.step_ops': 'swafuzz.features.remap.engine:STEP_OPS',
        'scenario.episode_rules': 'swafuzz.features.remap.kinds:EPISODE_RULES',
    },
)
