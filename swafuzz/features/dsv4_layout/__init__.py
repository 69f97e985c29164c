"""Feature record: the real DeepSeek-V4 SWA cache layout: quantizing store, 584-byte tokens; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='dsv4_layout',
    title='the real DeepSeek-V4 SWA cache layout: quantizing store, 584-byte tokens',
    source='spec §4.6',
    kinds=(
        Kind(
            'dsv4_layout',
            'swafuzz.features.dsv4_layout.kinds:dsv4_layout_cases',
            'bf16 [rows, 512] K rows quantized into V4 pages',
        ),
    ),
    fields='swafuzz.features.dsv4_layout.fields:FIELDS',
    validators=('swafuzz.features.dsv4_layout.rules:validate',),
    oracle=('swafuzz.features.dsv4_layout.oracle',),
    engine=('swafuzz.features.dsv4_layout.engine', 'swafuzz.kernels.dsv4_store',
            'swafuzz.targets.kv_pool'),
    sglang=('swafuzz.features.dsv4_layout.sglang', 'swafuzz.targets.sglang.store'),
    mutants=('swafuzz.features.dsv4_layout.mutants',),
    hooks={
        'oracle.part': 'swafuzz.features.dsv4_layout.oracle:DSV4LayoutOracle',
        'check.part': 'swafuzz.features.dsv4_layout.oracle:DSV4LayoutChecks',
        'engine.part': 'swafuzz.features.dsv4_layout.engine:DSV4LayoutEngine',
        'sglang.part': 'swafuzz.features.dsv4_layout.engine:DSV4LayoutSGLang',
        'sglang.facts': 'swafuzz.features.dsv4_layout.sglang_facts:FACTS',
    },
)
