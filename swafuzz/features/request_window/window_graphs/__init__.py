"""Feature record: DECODE graphs under a request window; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='window_graphs',
    title='DECODE graphs under a request window',
    source='addendum §4, §5 W7',
    kinds=(
        Kind(
            'window_graphs',
            'swafuzz.features.request_window.window_graphs.kinds:window_graph_cases',
            'DECODE / IDLE / DP graph replays under a window',
        ),
    ),
    oracle=('swafuzz.features.request_window.oracle', 'swafuzz.features.request_window.window_graphs.oracle'),
    engine=('swafuzz.features.request_window.window_graphs.engine',),
    sglang=('swafuzz.features.request_window.window_graphs.sglang',),
    checks=('window_graph',),
    check_modules=('swafuzz.features.request_window.window_graphs.checks',),
    mutants=('swafuzz.features.request_window.window_graphs.mutants',),
    since={
        'sglang': Since('0.5.23', (
            'request window DECODE-graph code the adapter drives (commit_packed_rows, the '
            'buffer registry; the request window exists from 0.5.21)'
        )),
    },
    hooks={
        'engine.part': 'swafuzz.features.request_window.window_graphs.engine:WindowGraphsEngine',
        'sglang.part': 'swafuzz.features.request_window.window_graphs.engine:WindowGraphsSGLang',
        'oracle.graph_use': 'swafuzz.features.request_window.window_graphs.oracle:expected_window_graph_use',
    },
)
