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
        Kind(
            'server_dp',
            'swafuzz.features.dp.server_kind:cases',
            'staggered requests on two attention-DP ranks (tp_size 2, dp_size 2, '
            "enable_dp_attention; each request's rank drawn, shrinks to rank 0), the pplx "
            'all-to-all (MAX_LEN every step) and encoder replay drawn (shrink to off): one '
            "pipeline per rank, each step's batches padded together by the release's MLP sync "
            'on 2 gloo processes',
            level='server',
            opt_in=True,
        ),
    ),
    fields='swafuzz.features.dp.fields:FIELDS',
    validators=('swafuzz.features.dp.rules:validate',),
    oracle=('swafuzz.features.dp.oracle',),
    engine=('swafuzz.features.dp.engine',),
    mutants=('swafuzz.features.dp.mutants',),
    hooks={
        'scenario.part': 'swafuzz.features.dp.rules:DPScenario',
        'oracle.part': 'swafuzz.features.dp.oracle:DPOracle',
        'engine.part': 'swafuzz.features.dp.engine:DPEngine',
        'scenario.step_ops': 'swafuzz.features.dp.fields:OPS',
        'scenario.episode_rules': 'swafuzz.features.dp.kinds:EPISODE_RULES',
        'oracle.step_ops': 'swafuzz.features.dp.oracle:STEP_OPS',
        'engine.step_ops': 'swafuzz.features.dp.engine:STEP_OPS',
        'sglang.server_pad': 'swafuzz.features.dp.sglang_server_pad:pad',
        'sglang.server_ranks': 'swafuzz.features.dp.sglang_server_ranks:run',
        'server.ranks_judge': 'swafuzz.features.dp.server_oracle:judge_ranks',
    },
)
