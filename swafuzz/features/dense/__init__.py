"""Feature record: dense SWA pool rows: decode, IDLE, draft-extend, target-verify and multi-step draft forwards, eager and in captured graphs; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Refusal

FEATURE = Feature(
    name='dense',
    title=(
        'dense SWA pool rows: decode, IDLE, draft-extend, target-verify and multi-step draft '
        'forwards, eager and in captured graphs'
    ),
    source='spec §2-§5, §9.1-§9.17',
    kinds=(
        Kind('decode', '.kinds:decode_cases', 'DECODE forwards, eager and graph'),
        Kind('idle', '.kinds:idle_cases', 'IDLE forwards between DECODE (MTP IDLE guard)'),
        Kind('draft_extend', '.kinds:draft_extend_cases', 'DRAFT_EXTEND forwards (speculative)'),
        Kind('target_verify', '.kinds:target_verify_cases', 'TARGET_VERIFY forwards'),
        Kind('multi_step_draft', '.kinds:multi_step_draft_cases',
             'multi-step draft decode (per-step slices)'),
        Kind('episode', '.kinds:episode_cases',
             'a mix of every forward on the same graphs, allocator churn and window eviction'),
        # the server level's core kinds (swafuzz run --level server)
        Kind('server_decode', 'swafuzz.server.base_strategies:decode_cases',
             'requests that all arrive at step 0: one EXTEND, then DECODE to the end',
             level='server'),
        Kind('server_mixed', 'swafuzz.server.base_strategies:mixed_cases',
             'staggered arrivals and aborts: EXTEND batches between DECODE batches, requests '
             'leaving while others run, chunked prefill (chunked_prefill_size drawn): a prompt '
             'split over EXTEND batches', level='server'),
        Kind('server_graph', 'swafuzz.server.base_strategies:graph_cases',
             'staggered arrivals with decode graphs captured (disable_cuda_graph false, '
             "cuda_graph_bs_decode drawn): the release's can_run_graph picks graph or eager per "
             'DECODE batch, padded rows on replay', level='server'),
        Kind('server_attn_tp', 'swafuzz.server.base_strategies:attn_tp_cases',
             'staggered arrivals on attention TP 1 or 2 (tp_size 2, moe_dense_tp_size 1; drawn, '
             "shrinks to 1): with 2, every forward padded by the release's MLP sync on 2 gloo "
             'processes, padded rows to the dummy slot', level='server'),
        Kind('server_chunked', 'swafuzz.server.chunk_strategies:chunked_cases',
             'long prompts over 2-5 chunked prefills with page 2 / 4 / 8 (chunk below, at and '
             'above the page), aborts while a prompt is chunked, pools tight enough for '
             "the release's retract_decode, decode graphs drawn", level='server'),
    ),
    fields='.fields:FIELDS',
    oracle=('swafuzz.oracles.engine', '.server_rules', 'swafuzz.oracles.shadow',
            'swafuzz.oracles.allocator', 'swafuzz.oracles.expectation', 'swafuzz.oracles.errors',
            'swafuzz.oracles.translation', 'swafuzz.oracles.store', 'swafuzz.oracles.paths',
            'swafuzz.oracles.invariants'),
    engine=('swafuzz.targets.engine', 'swafuzz.targets.allocator', 'swafuzz.targets.kv_pool',
            'swafuzz.targets.backend', 'swafuzz.targets.metadata', 'swafuzz.targets.runners',
            'swafuzz.targets.model', 'swafuzz.targets.forward_mode'),
    sglang=('swafuzz.targets.sglang.engine', 'swafuzz.targets.sglang.metadata',
            'swafuzz.targets.sglang.store'),
    checks=(
        'write_targets', 'pool_bytes', 'write_set', 'redzones', 'invariants', 'agreement',
        'capture_freeze', 'contracts', 'exec_path', 'prepared',
        # the server level's core checks (swafuzz.server.oracle's walk)
        'server:allocation', 'server:window_reads', 'server:contracts', 'server:retraction',
        'server:alloc_count', 'server:exec_path', 'server:write_targets', 'server:pool_bytes',
        'server:batch_shape', 'server:graph_fill', 'server:kv_held', 'server:model_dispatch',
    ),
    check_modules=('swafuzz.checks.write', 'swafuzz.checks.invariants', 'swafuzz.checks.cross',
                   'swafuzz.checks.contracts', 'swafuzz.checks.prep', 'swafuzz.server.oracle',
                   'swafuzz.server.graph_checks', 'swafuzz.server.held_checks',
                   'swafuzz.server.dispatch_checks'),
    mutants=('.mutants', '.server_mutants'),
    refusals=(
        # asked after the speculative and ranks refusals (spec_decode's, dp's)
        Refusal(
            'server', '.server_rules:graphs_without_sizes',
            'config.cuda_graph_bs_decode: the decode graph batch sizes must be given with '
            "disable_cuda_graph false (the release derives its default list from the GPU's "
            'memory; allowed: a list of batch sizes)',
            after='swafuzz.features.dp.server_rules:graphs_on_tp_ranks',
        ),
    ),
)
