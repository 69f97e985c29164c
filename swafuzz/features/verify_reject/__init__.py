"""Feature record: rejected draft tokens freed after a verify, their slots reused; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='verify_reject', source='sglang issue #27789, spec §9.15',
    title='rejected draft tokens freed after a verify, their slots reused',
    kinds=(Kind('verify_reject', '.kinds:verify_reject_cases',
                'verify with accept lengths; frees and reuse'),),
    fields='.fields:FIELDS', mutants=('.mutants',),
    oracle=('swafuzz.oracles.sharing',), engine=('swafuzz.targets.sharing',),
    hooks={'scenario.episode_rules': '.kinds:EPISODE_RULES'},
)
