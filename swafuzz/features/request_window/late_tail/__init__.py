"""Feature record: the late-layer tail: each request's last rows on the late layers; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='late_tail',
    title="the late-layer tail: each request's last rows on the late layers",
    source='addendum §5 T1-T3',
    kinds=(
        Kind(
            'late_tail',
            'swafuzz.features.request_window.late_tail.kinds:late_tail_cases',
            'extends and decodes with late tail-only layers',
        ),
    ),
    fields='swafuzz.features.request_window.late_tail.fields:FIELDS',
    validators=('swafuzz.features.request_window.late_tail.rules:validate',),
    oracle=('swafuzz.features.request_window.late_tail.oracle',),
    engine=('swafuzz.features.request_window.engine',),
    sglang=('swafuzz.features.request_window.sglang',),
    checks=('tail',),
    check_modules=('swafuzz.features.request_window.late_tail.checks',),
    mutants=('swafuzz.features.request_window.late_tail.mutants',),
    since={'sglang': Since('0.5.21', 'late-layer tail')},
    hooks={
        'oracle.step_path_ops': 'swafuzz.features.request_window.late_tail.rules:step_path_ops',
    },
)
