"""Feature record: encoder SWA replay, folded into the extend or as a separate forward; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='encoder_replay',
    title='encoder SWA replay, folded into the extend or as a separate forward',
    source='addendum §5 E1-E2',
    kinds=(
        Kind(
            'encoder_replay',
            'swafuzz.features.request_window.encoder_replay.kinds:encoder_replay_cases',
            'extends with replayed rows (the fold)',
            since={
                'sglang': Since('0.5.23', (
                    'encoder SWA replay folded into the extend (fold_encoder_swa_replay; 0.5.21'
                    ' / 0.5.22 replay in a forward of their own)'
                )),
            },
        ),
        Kind(
            'replay_tail',
            'swafuzz.features.request_window.encoder_replay.kinds:replay_tail_cases',
            'encoder replay and a late-layer tail in one Case',
            since={
                'sglang': Since('0.5.23', (
                    'encoder SWA replay folded into the extend / late-layer tail'
                )),
            },
        ),
        Kind(
            'replay_separate',
            'swafuzz.features.request_window.encoder_replay.kinds:replay_separate_cases',
            'the replay as a separate EXTEND forward',
            since={
                'sglang': Since('0.5.23', (
                    'encoder SWA replay batch builder the adapter drives (_build_replay_batch; '
                    'the separate forward exists from 0.5.21)'
                )),
            },
        ),
    ),
    fields='swafuzz.features.request_window.encoder_replay.fields:FIELDS',
    validators=('swafuzz.features.request_window.encoder_replay.rules:validate',),
    oracle=('swafuzz.features.request_window.oracle', 'swafuzz.features.request_window.tail_prefix.oracle'),
    engine=('swafuzz.features.request_window.engine', 'swafuzz.features.request_window.tail_prefix.engine'),
    sglang=('swafuzz.features.request_window.sglang', 'swafuzz.features.request_window.tail_prefix.sglang'),
    mutants=('swafuzz.features.request_window.encoder_replay.mutants',),
    hooks={
        'sglang.facts': 'swafuzz.features.request_window.encoder_replay.sglang_facts:FACTS',
    },
)
