"""Feature record: rejected draft tokens freed after a verify, their slots reused.

Semantics: ``swafuzz/features/verify_reject/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='verify_reject',
    title='rejected draft tokens freed after a verify, their slots reused',
    source='sglang issue #27789, spec §9.15',
    kinds=(
        Kind('verify_reject', 'swafuzz.features.verify_reject.kinds:verify_reject_cases',
             'verify with accept lengths; frees and reuse'),
    ),
    case_fields=('step.accept',),
    oracle=('swafuzz.oracles.sharing',),
    engine=('swafuzz.targets.sharing',),
    sglang=(),
    checks=(),
    mutants=('swafuzz.features.verify_reject.mutants',),
    since={},
    semantics='swafuzz/features/verify_reject/SEMANTICS.md',
)
