"""Feature record: the late-layer tail under graphs: row buckets, the capacity buffer; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='tail_graphs', source='addendum §5 T1/T4, §6 A3/A9',
    title='the late-layer tail under graphs: row buckets, the capacity buffer',
    kinds=(Kind('tail_graphs', '.kinds:tail_graph_cases',
                'tail row-bucket graphs and the prefill-graph tail'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), oracle=('.oracle',),
    engine=('.engine',), sglang=('.sglang',),
    checks=('tail_graph',), check_modules=('.checks',), mutants=('.mutants',),
    since={'sglang': Since('0.5.23', 'late-layer tail graphs in the form the adapter drives '
                           '(row-bucket tail graphs, compressor flags; the prefill-graph tail '
                           'exists from 0.5.22)')},
    hooks={'oracle.part': '.oracle:TailGraphsOracle', 'engine.part': '.engine:TailGraphsEngine',
           'sglang.part': '.engine:TailGraphsSGLang',
           'oracle.graph_use': '.oracle:expected_tail_graph_use'},
)
