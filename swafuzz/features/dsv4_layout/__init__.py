"""Feature record: the real DeepSeek-V4 SWA cache layout: quantizing store, 584-byte tokens; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='dsv4_layout', source='spec §4.6',
    title='the real DeepSeek-V4 SWA cache layout: quantizing store, 584-byte tokens',
    kinds=(Kind('dsv4_layout', '.kinds:dsv4_layout_cases',
                'bf16 [rows, 512] K rows quantized into V4 pages'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), oracle=('.oracle',),
    engine=('.engine', 'swafuzz.kernels.dsv4_store', 'swafuzz.targets.kv_pool'),
    sglang=('.sglang', 'swafuzz.targets.sglang.store'), mutants=('.mutants',),
    hooks={'oracle.part': '.oracle:DSV4LayoutOracle', 'check.part': '.oracle:DSV4LayoutChecks',
           'engine.part': '.engine:DSV4LayoutEngine', 'sglang.part': '.engine:DSV4LayoutSGLang',
           'sglang.facts': '.sglang_facts:FACTS'},
)
