"""Feature record: the radix (prefix) cache on at server level: the release's tree cache with its SWA component sharing, publishing, evicting and recovering prefixes; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Refusal, Since

FEATURE = Feature(
    name='radix_tree',
    title=(
        "the radix cache on at server level: the release's tree cache with its SWA component "
        '(match, insert over an existing path, tombstones, locks, eviction)'
    ),
    source='spec §9.15; PRs #29350, #29860, #27586 (SWA radix cache fixes)',
    kinds=(
        Kind('server_radix', '.server_kind:radix_cases',
             'the radix cache on (disable_radix_cache false): requests in prefix groups, '
             'staggered and aborted, sharing, branching, cached, evicted (window, memory '
             "pressure) and computed again through the release's tree cache; page sizes 1, 2, 4, "
             '8 against windows 1..5', level='server', opt_in=True,
             since={'sglang': Since('0.5.20', (
                 "the unified radix cache (mem_cache.unified_cache) with its scheduler's "
                 'publish, which the server level drives'))}),
    ),
    fields='.fields:FIELDS', oracle=('.server_rules',),
    checks=('server:prefix_hit', 'server:prefix_reads', 'server:tree_leak'),
    check_modules=('.server_oracle',), mutants=('.server_mutants',),
    hooks={'oracle.server_judge': '.server_oracle:server_judge',
           'sglang.part': '.sglang_part:RadixTreeSGLang', 'sglang.server_hops': '.server_hops:HOPS',
           'export.sglang_test': '.export:recipe'},
    refusals=(
        Refusal(
            'server', '.server_rules:not_driven_with',
            'config.disable_radix_cache: the radix cache is driven at server level on one rank, '
            'without speculative decoding or the request window (allowed: true, or false with '
            'tp_size 1, speculative_algorithm null and no bounded replay)',
            after='swafuzz.features.dense.server_rules:graphs_without_sizes',
        ),
        Refusal('server', '.server_rules:refusal', release=True),
    ),
)
