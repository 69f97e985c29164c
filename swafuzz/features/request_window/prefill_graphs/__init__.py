"""Feature record: breakable prefill graphs under a request window; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='prefill_graphs',
    title='breakable prefill graphs under a request window',
    source='addendum §4 (issue12-prefill)',
    kinds=(
        Kind(
            'prefill_graphs',
            'swafuzz.features.request_window.prefill_graphs.kinds:prefill_graph_cases',
            'admit / extend as prefill-graph replays',
        ),
    ),
    fields='swafuzz.features.request_window.prefill_graphs.fields:FIELDS',
    validators=('swafuzz.features.request_window.prefill_graphs.rules:validate',),
    oracle=('swafuzz.features.request_window.prefill_graphs.oracle',),
    engine=('swafuzz.features.request_window.prefill_graphs.engine',),
    sglang=('swafuzz.features.request_window.prefill_graphs.sglang',),
    mutants=('swafuzz.features.request_window.prefill_graphs.mutants',),
    since={'sglang': Since('0.5.23', 'prefill graphs under a request window')},
    hooks={
        'engine.part': 'swafuzz.features.request_window.prefill_graphs.engine:PrefillGraphsEngine',
        'sglang.part': 'swafuzz.features.request_window.prefill_graphs.engine:PrefillGraphsSGLang',
        'oracle.graph_use': 'swafuzz.features.request_window.prefill_graphs.oracle:expected_prefill_graph_use',
    },
)
