"""Feature record: DECODE graphs under a request window; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='window_graphs', source='addendum §4, §5 W7',
    title='DECODE graphs under a request window',
    kinds=(Kind('window_graphs', '.kinds:window_graph_cases',
                'DECODE / IDLE / DP graph replays under a window'),),
    engine=('.engine',), sglang=('.sglang',),
    oracle=('swafuzz.features.request_window.oracle', '.oracle'), mutants=('.mutants',),
    checks=('window_graph',), check_modules=('.checks',),
    since={'sglang': Since('0.5.23', 'request window DECODE-graph code the adapter drives '
                           '(commit_packed_rows, the buffer registry; the request window exists '
                           'from 0.5.21)')},
    hooks={'engine.part': '.engine:WindowGraphsEngine', 'sglang.part': '.engine:WindowGraphsSGLang',
           'oracle.graph_use': '.oracle:expected_window_graph_use'},
)
