"""Feature record: the state changes the server makes between forwards: a cache flush while idle (refused while a request runs) and admissions the SWA pool's capacity refuses; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='server_ops',
    title=(
        'the server\'s own state changes: a cache flush while idle (refused while a request '
        'runs), then new admissions; admissions that fit the full pool but not the SWA pool '
        '(refused, state unchanged)'
    ),
    source='spec §2.3 (allocator alloc / alloc_extend refusals, clear()), §2.4; the '
           'scheduler\'s flush_cache (refused unless idle)',
    kinds=(
        Kind('idle_flush', '.kinds:idle_flush_cases',
             'cache flush while idle (and refused while requests run), then new admissions'),
        Kind('swa_short', '.kinds:swa_short_cases',
             'admissions that fit the full pool but not the SWA pool: refused, state unchanged'),
    ),
    validators=('.rules:validate',), oracle=('.oracle',), engine=('.engine',),
    checks=('refusal',), check_modules=('.checks',), mutants=('.mutants',),
    hooks={'scenario.step_ops': '.fields:OPS', 'oracle.step_ops': '.oracle:STEP_OPS',
           'engine.step_ops': '.engine:STEP_OPS'},
)
