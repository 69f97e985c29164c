"""Feature record: the V4.1 request window: workspace layout, history rows, commits, ring tags; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='request_window',
    title='the V4.1 request window: workspace layout, history rows, commits, ring tags',
    source='addendum §5 W1-W8',
    kinds=(
        Kind(
            'request_window',
            'swafuzz.features.request_window.kinds:request_window_cases',
            'eager forwards under a request window',
        ),
    ),
    fields='swafuzz.features.request_window.fields:FIELDS',
    validators=('swafuzz.features.request_window.rules:validate',),
    oracle=(
        'swafuzz.features.request_window.oracle',
        'swafuzz.features.request_window.oracle_state',
        'swafuzz.features.request_window.oracle_layout',
        'swafuzz.features.request_window.server_oracle',
        'swafuzz.features.request_window.server_hops',
        'swafuzz.features.request_window.server_rules',
    ),
    engine=('swafuzz.features.request_window.engine', 'swafuzz.features.request_window.window'),
    sglang=(
        'swafuzz.features.request_window.sglang',
        'swafuzz.features.request_window.sglang_attrs',
        'swafuzz.features.request_window.sglang_server',
    ),
    checks=('window', 'history', 'server:window_history', 'server:window_slots',
            'server:window_ring'),
    check_modules=(
        'swafuzz.features.request_window.checks',
        'swafuzz.features.request_window.history_checks',
        'swafuzz.features.request_window.server_oracle',
    ),
    mutants=('swafuzz.features.request_window.mutants',
             'swafuzz.features.request_window.server_mutants'),
    since={'sglang': Since('0.5.21', 'request window')},
    hooks={
        'sglang.facts': 'swafuzz.features.request_window.sglang_facts:FACTS',
        'check.expected_refusal': 'swafuzz.features.request_window.lane:expected_refusal',
        'sglang.real_pool': 'swafuzz.features.request_window.sglang_attrs:real_pool_attrs',
        'oracle.step_path_ops': 'swafuzz.features.request_window.rules:step_path_ops',
        'oracle.graph_admit': 'swafuzz.features.request_window.rules:admit_in_graph',
        'sglang.server_window': 'swafuzz.features.request_window.sglang_server:ServerWindow',
        'server.window_oracle': 'swafuzz.features.request_window.server_oracle:ServerWindowOracle',
        'sglang.server_hops': 'swafuzz.features.request_window.server_hops:HOPS',
        'sglang.server_refusal': 'swafuzz.features.request_window.server_rules:refusal',
        'server.kinds': 'swafuzz.features.request_window.server_kind:KINDS',
    },
)
