"""Feature record: the V4.1 request window: workspace layout, history rows, commits, ring tags; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Refusal, Since

FEATURE = Feature(
    name='request_window', source='addendum §5 W1-W8',
    title='the V4.1 request window: workspace layout, history rows, commits, ring tags',
    kinds=(
        Kind('request_window', '.kinds:request_window_cases',
             'eager forwards under a request window'),
        Kind('server_window', '.server_kind:window_cases',
             'staggered arrivals with enable_encoder_swa_bounded_replay: every forward stored '
             "through the release's per-request SWA window (slot resets, layout, resolver, "
             'commit), on attention TP 1 or 2 (drawn, shrinks to 1; 2: the release\'s MLP-sync '
             'padding first); the sliding window a whole number of pages',
             level='server', opt_in=True),
        Kind('server_window_tail', '.server_kind:tail_cases',
             'one or two requests with enable_encoder_swa_bounded_replay and the late-layer tail '
             '(enable_decoder_swa_bounded_replay, late layers from model.late_layer_start) on one '
             "rank, chunked prefill 384 (the release's minimum with the window) and prompts past "
             "it: the last chunk's tail shorter than the sliding window",
             level='server', opt_in=True),
    ),
    fields='.fields:FIELDS', validators=('.rules:validate',),
    oracle=('.oracle', '.oracle_state', '.oracle_layout', '.server_oracle', '.server_hops',
            '.server_rules'),
    engine=('.engine', '.window'), sglang=('.sglang', '.sglang_server'),
    checks=('window', 'history', 'server:window_history', 'server:window_slots',
            'server:window_ring'),
    check_modules=('.checks', '.history_checks', '.server_oracle'),
    mutants=('.mutants', '.server_mutants'),
    since={'sglang': Since('0.5.21', 'request window')},
    refusals=(
        Refusal('server', '.server_rules:tail_not_driven',
                'config.enable_decoder_swa_bounded_replay: the late-layer tail is driven at '
                'server level with enable_encoder_swa_bounded_replay on one rank only (allowed: '
                'false, or true with enable_encoder_swa_bounded_replay true and tp_size 1)'),
        Refusal('server', '.server_rules:graphs_with_replay',
                'config.disable_cuda_graph: decode graphs with enable_encoder_swa_bounded_replay '
                'are not driven at server level yet (allowed: true)'),
        Refusal('server', '.server_rules:refusal', release=True),
    ),
    hooks={
        'check.part': '.lane:RequestWindowChecks', 'oracle.part': '.oracle:RequestWindowOracle',
        'sglang.part': '.engine:RequestWindowSGLang', 'sglang.facts': '.sglang_facts:FACTS',
        'oracle.step_path_ops': '.rules:step_path_ops',
        'sglang.server_window': '.sglang_server:ServerWindow',
        'server.window_oracle': '.server_oracle:ServerWindowOracle',
        'sglang.server_hops': '.server_hops:HOPS',
        'export.sglang_test': '.export:recipe',
    },
)
