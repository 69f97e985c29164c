"""Feature record: the decode side of prefill/decode disaggregation at server level: the release's prealloc queue taking over transferred prompts (SWA tail allocation, mapping reset of recycled pages), then decoding them; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Refusal, Since

FEATURE = Feature(
    name='pd_decode',
    title=(
        "the decode side of PD disaggregation: transferred prompts taken over through the "
        "release's DecodePreallocQueue (SWA tail pre-allocation, recycled pages' mapping reset), "
        "then decoded"
    ),
    source='spec §9.15; sgl-project/sglang PRs #25805, #28085',
    kinds=(
        Kind('server_pd_decode', '.server_kind:pd_cases',
             'the decode side of PD disaggregation: staggered prompts prefilled elsewhere, '
             "taken over through the release's prealloc queue (fake transfer backend), decoded "
             'on recycled pages; page sizes 1, 2, 4, 8 against windows 1..6',
             level='server', opt_in=True,
             since={'sglang': Since('0.5.19', (
                 'disaggregation.utils._all_reduce_polls (the decode queue\'s poll all-reduce '
                 'the takeover is driven through)'))}),
    ),
    fields='.fields:FIELDS', oracle=('.server_rules',),
    checks=('server:takeover', 'server:takeover_reads'),
    check_modules=('.server_oracle',), mutants=('.server_mutants',),
    hooks={'oracle.server_judge': '.server_oracle:server_judge',
           'sglang.part': '.sglang_part:PDDecodeSGLang', 'sglang.server_hops': '.server_hops:HOPS'},
    refusals=(
        Refusal('server', '.server_rules:not_driven_with',
                'config.disaggregation_mode: the decode side is driven on one rank with the fake '
                'transfer backend, without speculative decoding, decode graphs, the radix cache '
                'or the request window (allowed: null, or decode with tp_size 1, '
                'disaggregation_transfer_backend fake, disable_cuda_graph true, '
                'disable_radix_cache true, speculative_algorithm null and no bounded replay)'),
        Refusal('server', '.server_rules:refusal', release=True),
    ),
)
