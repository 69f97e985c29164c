"""Feature record: breakable prefill graphs under a request window.

Semantics: ``swafuzz/features/prefill_graphs/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='prefill_graphs',
    title='breakable prefill graphs under a request window',
    source='addendum §4 (issue12-prefill)',
    kinds=(
        Kind('prefill_graphs', 'swafuzz.scenarios.prefill_strategies:prefill_graph_cases',
             'admit / extend as prefill-graph replays'),
    ),
    case_fields=('graph.prefill_buckets',),
    validators=('swafuzz.scenarios.rules.prefill_graphs:validate',),
    oracle=('swafuzz.oracles.window_prefill',),
    engine=('swafuzz.targets.window_prefill',),
    sglang=('swafuzz.targets.sglang.window_prefill',),
    checks=(),
    mutants=('swafuzz.targets.mutants.prefill_graphs',),
    since={'sglang': Since('0.5.23',
        'prefill graphs under a request window')},
    semantics='swafuzz/features/prefill_graphs/SEMANTICS.md',
)
