"""Feature record: encoder SWA replay, folded into the extend or as a separate forward; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

RW = 'swafuzz.features.request_window'
FEATURE = Feature(
    name='encoder_replay', source='addendum §5 E1-E2',
    title='encoder SWA replay, folded into the extend or as a separate forward',
    kinds=(
        Kind('encoder_replay', '.kinds:encoder_replay_cases',
             'extends with replayed rows (the fold)',
             since={'sglang': Since('0.5.23', 'encoder SWA replay folded into the extend '
                                    '(fold_encoder_swa_replay; 0.5.21 / 0.5.22 replay in a '
                                    'forward of their own)')}),
        Kind('replay_tail', '.kinds:replay_tail_cases',
             'encoder replay and a late-layer tail in one Case',
             since={'sglang': Since('0.5.23', 'encoder SWA replay folded into the extend / '
                                    'late-layer tail')}),
        Kind('replay_separate', '.kinds:replay_separate_cases',
             'the replay as a separate EXTEND forward',
             since={'sglang': Since('0.5.23', 'encoder SWA replay batch builder the adapter '
                                    'drives (_build_replay_batch; the separate forward exists '
                                    'from 0.5.21)')}),
    ),
    fields='.fields:FIELDS', validators=('.rules:validate',),
    oracle=(f'{RW}.oracle', f'{RW}.tail_prefix.oracle'),
    engine=(f'{RW}.engine', f'{RW}.tail_prefix.engine'),
    sglang=(f'{RW}.sglang', f'{RW}.tail_prefix.sglang'),
    mutants=('.mutants',), hooks={'sglang.facts': '.sglang_facts:FACTS'},
)
