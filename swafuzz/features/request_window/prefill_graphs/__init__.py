"""Feature record: breakable prefill graphs under a request window; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='prefill_graphs', source='addendum §4 (issue12-prefill)',
    title='breakable prefill graphs under a request window',
    kinds=(Kind('prefill_graphs', '.kinds:prefill_graph_cases',
                'admit / extend as prefill-graph replays'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), oracle=('.oracle',),
    engine=('.engine',), sglang=('.sglang',), mutants=('.mutants',),
    since={'sglang': Since('0.5.23', 'prefill graphs under a request window')},
    hooks={'engine.part': '.engine:PrefillGraphsEngine',
           'sglang.part': '.engine:PrefillGraphsSGLang',
           'oracle.graph_use': '.oracle:expected_prefill_graph_use'},
)
