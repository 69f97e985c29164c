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
    oracle=('swafuzz.oracles.paths',),
    engine=('swafuzz.targets.dp',),
    mutants=('swafuzz.features.dp.mutants',),
    semantics='swafuzz/features/dp/SEMANTICS.md',
    hooks={
        'sglang.facts': 'swafuzz.features.dp.sglang_facts:FACTS',
    },
)
