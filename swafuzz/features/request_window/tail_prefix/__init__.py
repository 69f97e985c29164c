"""Feature record: prefix hits under a late-layer tail or window, and the compressors' write locations; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='tail_prefix', source='addendum §5 T5, E1, §6 A13',
    title="prefix hits under a late-layer tail or window, and the compressors' write locations",
    kinds=(Kind('tail_prefix', '.kinds:tail_prefix_cases',
                'prefix hits under a tail, replay and compressors'),),
    oracle=('.oracle',), engine=('.engine',), sglang=('.sglang',),
    checks=('compressor', 'reprefill'), check_modules=('.checks',), mutants=('.mutants',),
    since={'sglang': Since('0.5.23', 'late-layer tail prefix cap, replay fold and compressor '
                           'code in the form the adapter drives (replay_len, _fold_batch, '
                           '_compressor_out_loc; the features exist from 0.5.21)')},
    hooks={'oracle.part': '.oracle:TailPrefixOracle', 'sglang.part': '.engine:TailPrefixSGLang',
           'sglang.facts': '.sglang_facts:FACTS'},
)
