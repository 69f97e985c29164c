"""Feature record: rejected draft tokens freed after a verify, their slots reused; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='verify_reject',
    title='rejected draft tokens freed after a verify, their slots reused',
    source='sglang issue #27789, spec §9.15',
    kinds=(
        Kind(
            'verify_reject',
            'swafuzz.features.verify_reject.kinds:verify_reject_cases',
            'verify with accept lengths; frees and reuse',
        ),
    ),
    fields='swafuzz.features.verify_reject.fields:FIELDS',
    oracle=('swafuzz.oracles.sharing',),
    engine=('swafuzz.targets.sharing',),
    mutants=('swafuzz.features.verify_reject.mutants',),
    hooks={
        'scenario.episode_rules': 'swafuzz.features.verify_reject.kinds:EPISODE_RULES',
    },
)
