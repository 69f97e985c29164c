"""Feature record: the V4.1 request window: workspace layout, history rows, commits, ring tags.

Semantics: ``swafuzz/features/request_window/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='request_window',
    title='the V4.1 request window: workspace layout, history rows, commits, ring tags',
    source='addendum §5 W1-W8',
    kinds=(
        Kind('request_window', 'swafuzz.scenarios.window_strategies:request_window_cases',
             'eager forwards under a request window'),
    ),
    case_fields=('pool.request_window', 'pool.window_slots', 'pool.window_chunk', 'step.lengths'),
    validators=('swafuzz.scenarios.rules.request_window:validate',),
    oracle=('swafuzz.oracles.window', 'swafuzz.oracles.window_state', 'swafuzz.oracles.window_layout'),
    engine=('swafuzz.targets.window',),
    sglang=('swafuzz.targets.sglang.window',),
    checks=('window', 'history'),
    check_modules=('swafuzz.harness.window_checks', 'swafuzz.harness.history_checks'),
    mutants=('swafuzz.targets.mutants.request_window',),
    since={'sglang': Since('0.5.21',
        'request window')},
    semantics='swafuzz/features/request_window/SEMANTICS.md',
)
