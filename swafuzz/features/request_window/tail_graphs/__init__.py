"""Feature record: the late-layer tail under graphs: row buckets, the capacity buffer; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='tail_graphs',
    title='the late-layer tail under graphs: row buckets, the capacity buffer',
    source='addendum §5 T1/T4, §6 A3/A9',
    kinds=(
        Kind(
            'tail_graphs',
            'swafuzz.features.request_window.tail_graphs.kinds:tail_graph_cases',
            'tail row-bucket graphs and the prefill-graph tail',
        ),
    ),
    fields='swafuzz.features.request_window.tail_graphs.fields:FIELDS',
    validators=('swafuzz.features.request_window.tail_graphs.rules:validate',),
    oracle=('swafuzz.features.request_window.tail_graphs.oracle',),
    engine=('swafuzz.features.request_window.tail_graphs.engine',),
    sglang=('swafuzz.features.request_window.tail_graphs.sglang',),
    checks=('tail_graph',),
    check_modules=('swafuzz.features.request_window.tail_graphs.checks',),
    mutants=('swafuzz.features.request_window.tail_graphs.mutants',),
    since={
        'sglang': Since('0.5.23', (
            'late-layer tail graphs in the form the adapter drives (row-bucket tail graphs, '
            'compressor flags; the prefill-graph tail exists from 0.5.22)'
        )),
    },
    hooks={
        'oracle.part': 'swafuzz.features.request_window.tail_graphs.oracle:TailGraphsOracle',
        'engine.part': 'swafuzz.features.request_window.tail_graphs.engine:TailGraphsEngine',
        'sglang.part': 'swafuzz.features.request_window.tail_graphs.engine:TailGraphsSGLang',
        'oracle.graph_use': 'swafuzz.features.request_window.tail_graphs.oracle:expected_tail_graph_use',
    },
)
