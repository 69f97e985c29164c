"""Feature record: prefix hits under a late-layer tail or window, and the compressors' write locations; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='tail_prefix',
    title="prefix hits under a late-layer tail or window, and the compressors' write locations",
    source='addendum §5 T5, E1, §6 A13',
    kinds=(
        Kind(
            'tail_prefix',
            'swafuzz.features.request_window.tail_prefix.kinds:tail_prefix_cases',
            'prefix hits under a tail, replay and compressors',
        ),
    ),
    oracle=('swafuzz.features.request_window.tail_prefix.oracle',),
    engine=('swafuzz.features.request_window.tail_prefix.engine',),
    sglang=('swafuzz.features.request_window.tail_prefix.sglang',),
    checks=('compressor', 'reprefill'),
    check_modules=('swafuzz.features.request_window.tail_prefix.checks',),
    mutants=('swafuzz.features.request_window.tail_prefix.mutants',),
    since={
        'sglang': Since('0.5.23', (
            'late-layer tail prefix cap, replay fold and compressor code in the form the '
            'adapter drives (replay_len, _fold_batch, _compressor_out_loc; the features exist '
            'from 0.5.21)'
        )),
    },
    hooks={
        'oracle.part': 'swafuzz.features.request_window.tail_prefix.oracle:TailPrefixOracle',
        'sglang.part': 'swafuzz.features.request_window.tail_prefix.engine:TailPrefixSGLang',
        'sglang.facts': 'swafuzz.features.request_window.tail_prefix.sglang_facts:FACTS',
    },
)
