"""Feature record: target verify under a request window (DSpark early metadata), its graph, DP-padded EXTEND; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='dspark', source='addendum (issue12-dspark)',
    title='target verify under a request window (DSpark early metadata), its graph, DP-padded '
          'EXTEND',
    kinds=(
        Kind('dspark_verify', '.kinds:dspark_verify_cases', 'verify under a window',
             since={'sglang': Since('0.5.21', 'request window (target verify)')}),
        Kind('dspark_verify_graph', '.kinds:dspark_verify_graph_cases',
             'the TARGET_VERIFY graph under a window',
             since={'sglang': Since(None, "the DSpark TARGET_VERIFY graph under a request window: "
                                    "no release's adapter drives it "
                                    '(features/request_window/dspark/engine_graph.py models it)')}),
        Kind('window_dp_extend', '.kinds:window_dp_extend_cases', 'DP-padded EXTENDs under a window',
             since={'sglang': Since('0.5.23', 'request window with the encoder-replay fold its '
                                    'DP-padded extends use (fold_encoder_swa_replay; 0.5.21 / '
                                    '0.5.22 replay in a forward of their own)')}),
    ),
    oracle=('.oracle',), engine=('.engine', '.engine_graph'), sglang=('.sglang',),
    mutants=('.mutants',),
    hooks={'engine.part': '.engine:DSparkEngine', 'sglang.part': '.engine:DSparkSGLang'},
)
