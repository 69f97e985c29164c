"""Feature record: the late-layer tail: each request's last rows on the late layers.

Semantics: ``swafuzz/scenarios/case.py``. The generic machinery reads this record; see :mod:`swafuzz.features`.
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
    oracle=('swafuzz.oracles.tail',),
    engine=('swafuzz.targets.window',),
    sglang=('swafuzz.targets.sglang.window',),
    checks=('tail',),
    check_modules=('swafuzz.harness.window_checks',),
    mutants=('swafuzz.targets.mutants.late_tail',),
    since={'sglang': Since('0.5.21',
        'late-layer tail')},
    semantics='swafuzz/scenarios/case.py',
)
