"""Feature record: DP attention: DP-padded batches and the re-padding / EXTEND rewrite of speculative forwards; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Refusal, Since

#: the first release whose runtime context publishes per rank (SpawnRanks): the server-level
#: ranks' MLP-sync bring-up on gloo needs it
RANKED = Since('0.5.21', 'runtime_context with its ranked publish (SpawnRanks)')

FEATURE = Feature(
    name='dp',
    title=(
        'DP attention: DP-padded batches and the re-padding / EXTEND rewrite of speculative '
        'forwards'
    ),
    source='spec §5.4, §9.2',
    kinds=(
        Kind('dp_padded', '.kinds:dp_padded_cases', 'DP-padded DECODE batches (MLP-sync MAX_LEN)'),
        Kind('dp_spec', '.kinds:dp_spec_cases',
             'DP re-padding of verify / draft-extend / multi-step draft and the rewrite to EXTEND'),
        Kind(
            'server_dp', '.server_kind:cases',
            'staggered requests on two attention-DP ranks (tp_size 2, dp_size 2, '
            "enable_dp_attention; each request's rank drawn, shrinks to rank 0), the pplx "
            'all-to-all (MAX_LEN every step) and encoder replay drawn (shrink to off): one '
            "pipeline per rank, each step's batches padded together by the release's MLP sync "
            'on 2 gloo processes',
            level='server',
            opt_in=True,
            since={'sglang': RANKED},
        ),
        Kind(
            'server_dp_overlap', '.server_kind:overlap_cases',
            'two attention-DP ranks whose work overlaps over several steps (tp_size 2, dp_size '
            '2): rank 0 decodes while rank 1 extends its later arrivals, each rank IDLE while '
            "its peer works (unpadded and padded), pplx drawn: every forward and IDLE through "
            "the release's model runner (ModelRunner.forward, EagerRunner._execute_*)",
            level='server',
            opt_in=True,
            since={'sglang': RANKED},
        ),
    ),
    fields='.fields:FIELDS', validators=('.rules:validate',), engine=('.engine',),
    oracle=('.oracle', '.server_rules'),
    checks=('server:dp_convert',), check_modules=('.server_convert_oracle',),
    mutants=('swafuzz.features.dp.mutants',),
    hooks={
        'scenario.part': '.rules:DPScenario', 'oracle.part': '.oracle:DPOracle',
        'engine.part': '.engine:DPEngine', 'scenario.step_ops': '.fields:OPS',
        'scenario.episode_rules': '.kinds:EPISODE_RULES', 'oracle.step_ops': '.oracle:STEP_OPS',
        'engine.step_ops': '.engine:STEP_OPS', 'sglang.server_pad': '.sglang_server_pad:pad',
        'sglang.server_ranks': '.sglang_server_ranks:run',
        'oracle.server_judge': '.server_oracle:server_judge',
    },
    refusals=(
        # asked between the speculative refusals (spec_decode's), before dense's
        Refusal(
            'server', '.server_rules:ranks_not_driven',
            'config.tp_size and the data-parallel fields: one rank, attention TP 2, or two '
            'data-parallel attention ranks (allowed: tp_size 1, dp_size 1, no data-parallel '
            'attention; or tp_size 2 with moe_dense_tp_size 1, dp_size 1, no data-parallel '
            "attention: both attention-TP ranks hold the batch, padded by the release's MLP "
            'sync; or tp_size 2, dp_size 2 and data-parallel attention: one pipeline per rank, '
            "each rank's batch padded by the release's MLP sync)",
            after='swafuzz.features.spec_decode.server_rules:spec_not_driven',
        ),
        Refusal(
            'server', '.server_rules:graphs_on_tp_ranks',
            'config.disable_cuda_graph: decode graphs with attention TP > 1 are not driven at '
            'server level yet (allowed: true with tp_size 2)',
            after='swafuzz.features.spec_decode.server_rules:spec_on_dp_ranks',
        ),
        Refusal(
            'server', '.server_rules:prefill_graph_not_driven',
            'config.cuda_graph_backend_prefill / cuda_graph_bs_prefill: the prefill graph is '
            'driven as the attention-DP ranks\' vote only (allowed: both null; or breakable with '
            'captured token counts on tp_size 2, dp_size 2 with data-parallel attention, no '
            'moe_a2a_backend, no encoder replay)',
            after='swafuzz.features.radix_tree.server_rules:not_driven_with',
        ),
        Refusal('server', '.sglang_sync_prefill:refusal', release=True),
    ),
)
