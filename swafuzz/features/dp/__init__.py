"""Feature record: DP attention: DP-padded batches and the re-padding / EXTEND rewrite of speculative forwards; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='dp',
    title=(
        'DP attention: DP-padded batches and the re-padding / EXTEND rewrite of speculative '
        'forwards'
    ),
    source='spec §5.4, §9.2',
    kinds=(
        Kind(
            'dp_padded',
            'swafuzz.features.dp.kinds:dp_padded_cases',
            'DP-padded DECODE batches (MLP-sync MAX_LEN)',
        ),
        Kind(
            'dp_spec',
            'swafuzz.features.dp.kinds:dp_spec_cases',
            'DP re-padding of verify / draft-extend / multi-step draft and the rewrite to EXTEND',
        ),
    ),
    fields='swafuzz.features.dp.fields:FIELDS',
    validators=('swafuzz.features.dp.rules:validate',),
    oracle=('swafuzz.features.dp.oracle',),
    engine=('swafuzz.features.dp.engine',),
    mutants=('swafuzz.features.dp.mutants',),
    hooks={
        'scenario.step_ops': 'swafuzz.features.dp.fields:OPS',
        'scenario.step_shape': 'swafuzz.features.dp.rules:step_shape',
        'scenario.episode_rules': 'swafuzz.features.dp.kinds:EPISODE_RULES',
        'oracle.step_check': 'swafuzz.features.dp.oracle:step_check',
        'oracle.step_ops': 'swafuzz.features.dp.oracle:STEP_OPS',
        'oracle.rewrite': 'swafuzz.features.dp.oracle:rewrite',
        'oracle.batch_pad': 'swafuzz.features.dp.oracle:batch_pad',
        'oracle.path_ops': 'swafuzz.features.dp.oracle:PATH_OPS',
        'engine.step_ops': 'swafuzz.features.dp.engine:STEP_OPS',
        'engine.rank_pad': 'swafuzz.features.dp.engine:DPAttention',
        'sglang.server_pad': 'swafuzz.features.dp.sglang_server_pad:pad',
        'sglang.server_ranks': 'swafuzz.features.dp.sglang_server_ranks:run',
        'server.kinds': 'swafuzz.features.dp.server_kind:KINDS',
        'server.ranks_judge': 'swafuzz.features.dp.server_oracle:judge_ranks',
    },
)
