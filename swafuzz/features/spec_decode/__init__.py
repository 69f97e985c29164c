"""Feature record: speculative decoding at server level (EAGLE, top-k 1: the release's spec-v2
reserve, draft, verify prep, accept bookkeeping and draft-extend prep; with decode graphs the
verify through the release's TARGET_VERIFY graph runner); its contract:
``SEMANTICS.md`` beside this file. Its component-level forwards (draft-extend, target-verify,
multi-step draft) are ``dense``'s kinds."""

from swafuzz.features.record import Feature, Kind, Refusal, Since

#: the first release with the spec-v2 EAGLE worker the server level drives
SPEC_V2 = Since('0.5.16', 'spec-v2 EAGLE worker (speculative.eagle_worker_common)')

FEATURE = Feature(
    name='spec_decode', source='spec §5, §9, §9.3; PR #22373 (spec-v2 over-allocation free)',
    title=(
        "speculative decoding at server level: the release's spec-v2 reserve, draft, verify "
        'prep, accept bookkeeping and draft-extend prep'
    ),
    kinds=(
        Kind('server_spec', '.server_kind:spec_cases',
             'speculative decoding (EAGLE, topk 1, 1..3 steps, draft tokens steps + 1) with '
             'staggered arrivals and drawn per-verify accept lengths: each DECODE the '
             "release's spec-v2 reserve, verify prep, accept bookkeeping and draft-extend prep",
             level='server', opt_in=True, since={'sglang': SPEC_V2}),
        Kind('server_spec_graph', '.server_kind:spec_graph_cases',
             'server_spec with decode graphs: each verify through the release\'s target '
             'TARGET_VERIFY graph runner (can_run_graph, load_batch: bucket, padded rows, the '
             'DSV4 backend\'s verify replay metadata), batch sizes around the captured buckets',
             level='server', opt_in=True, since={'sglang': SPEC_V2}),
    ),
    fields='.fields:FIELDS', oracle=('.server_rules',),
    checks=('server:spec_alloc', 'server:draft_decode', 'server:verify_rows', 'server:verify_graph',
            'server:draft_extend', 'server:spec_accept', 'server:spec_pool', 'server:spec_leak'),
    check_modules=('.server_oracle',), mutants=('.server_mutants',),
    hooks={'oracle.server_judge': '.server_oracle:server_judge',
           'sglang.server_hops': '.server_hops:HOPS'},
    refusals=(
        Refusal(
            'server', '.server_rules:spec_not_driven',
            'config.speculative_algorithm: speculative decoding is driven at server level for '
            'EAGLE with speculative_eagle_topk 1, speculative_num_draft_tokens = '
            'speculative_num_steps + 1 and one rank, eager or with decode graphs (allowed: '
            'those, or null)',
        ),
        Refusal(
            'server', '.server_rules:spec_tree',
            'config.speculative_eagle_topk: a draft tree (top-k above 1) is refused by the '
            "release itself for DeepSeek-V4, the model whose SWA pool this level drives (its "
            "argument hook asserts EAGLE topk == 1; the DSV4 attention backend's constructor "
            "asserts MTP topk in 0, 1; the spec-v2 worker's chain sampler asserts topk == 1) "
            '(allowed: 1)',
        ),
        Refusal(
            'server', '.server_rules:spec_on_dp_ranks',
            'config.speculative_algorithm: speculative decoding on data-parallel attention '
            'ranks is not driven at server level yet (allowed: null with data-parallel '
            'attention)',
            after='swafuzz.features.dp.server_rules:ranks_not_driven',
        ),
    ),
)
