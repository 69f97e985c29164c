"""Feature record: the late-layer tail: each request's last rows on the late layers; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='late_tail', source='addendum §5 T1-T3',
    title="the late-layer tail: each request's last rows on the late layers",
    kinds=(Kind('late_tail', '.kinds:late_tail_cases',
                'extends and decodes with late tail-only layers'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), oracle=('.oracle',),
    engine=('swafuzz.features.request_window.engine',),
    sglang=('swafuzz.features.request_window.sglang',),
    checks=('tail',), check_modules=('.checks',), mutants=('.mutants',),
    since={'sglang': Since('0.5.21', 'late-layer tail')},
    hooks={'oracle.step_path_ops': '.rules:step_path_ops', 'export.sglang_test': '.export:recipe'},
)
