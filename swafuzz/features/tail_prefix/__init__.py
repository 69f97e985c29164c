"""Feature record: prefix hits under a late-layer tail or window, and the compressors' write locations.

Semantics: ``swafuzz/features/tail_prefix/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='tail_prefix',
    title="prefix hits under a late-layer tail or window, and the compressors' write locations",
    source='addendum §5 T5, E1, §6 A13',
    kinds=(
        Kind('tail_prefix', 'swafuzz.scenarios.tail_prefix_strategies:tail_prefix_cases',
             'prefix hits under a tail, replay and compressors'),
    ),
    case_fields=(),
    oracle=('swafuzz.oracles.tail_prefix',),
    engine=('swafuzz.targets.tail_prefix',),
    sglang=('swafuzz.targets.sglang.tail_prefix',),
    checks=('compressor', 'reprefill'),
    check_modules=('swafuzz.harness.tail_prefix_checks',),
    mutants=('swafuzz.targets.mutants.tail_prefix',),
    since={'sglang': Since('0.5.23',
        'late-layer tail prefix cap, replay fold and compressor code in the form '
        'the adapter drives (replay_len, _fold_batch, _compressor_out_loc; the '
        'features exist from 0.5.21)')},
    semantics='swafuzz/features/tail_prefix/SEMANTICS.md',
)
