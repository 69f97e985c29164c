"""Feature record: mapping re-registration (HiCache load-back) between forwards; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='remap', source='spec §2.8',
    title='mapping re-registration (HiCache load-back) between forwards',
    kinds=(Kind('remap', '.kinds:remap_cases',
                'register_mapping with a new tensor between decode forwards'),),
    engine=('swafuzz.targets.allocator', '.engine'), mutants=('.mutants',),
    hooks={'scenario.step_ops': '.fields:OPS', 'engine.step_ops': '.engine:STEP_OPS',
           'scenario.episode_rules': '.kinds:EPISODE_RULES'},
)
