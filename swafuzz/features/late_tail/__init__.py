"""Feature record: the late-layer tail: each request's last rows on the late layers.

Semantics: ``swafuzz/features/late_tail/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='late_tail',
    title="the late-layer tail: each request's last rows on the late layers",
    source='addendum §5 T1-T3',
    kinds=(
        Kind('late_tail', 'swafuzz.scenarios.window_strategies:late_tail_cases',
             'extends and decodes with late tail-only layers'),
    ),
    case_fields=('pool.late_layer_start',),
    validators=('swafuzz.scenarios.rules.late_tail:validate',),
    oracle=('swafuzz.oracles.tail',),
    engine=('swafuzz.targets.window',),
    sglang=('swafuzz.targets.sglang.window',),
    checks=('tail',),
    check_modules=('swafuzz.harness.tail_checks',),
    mutants=('swafuzz.targets.mutants.late_tail',),
    since={'sglang': Since('0.5.21',
        'late-layer tail')},
    semantics='swafuzz/features/late_tail/SEMANTICS.md',
)
