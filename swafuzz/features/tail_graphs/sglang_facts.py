"""The ``tail_graphs`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    (('late-layer tail under graphs: enter/exit_late_layer_tail, prefill-graph LateLayerTail '
      '(capacity buffer, real_rows_count)'),
     'absent', 'real',
     ("0.5.23 (features/tail_graphs/sglang.py): the release's enter_late_layer_tail / "
      'exit_late_layer_tail (forward_metadata swap, saved non-padded counts, real_rows_count) on '
      "the adapter's backend instance, its capacity-sized LateLayerTail record and resolver; "
      '0.5.12 has no tail (kind tail_graphs refused: first in 0.5.22)')),
    (('late-layer tail under graphs: DecoderReplayTail / RowBucketGraphRunner, prefill-graph '
      'buffer refill'),
     'absent', 'modelled',
     ('CUDA only (_flatten_state asserts CUDA tensors, capture reads torch.cuda.mem_get_info, the '
      'store break needs a piecewise forward context): the bucket choice, static K rows, the store'
      " break's slice to the real rows and the IDLE rank's commit guard are the engine model's "
      '(features/tail_graphs/engine.py); the refill of the persistent buffers lives in '
      '_build_late_layer_tail_metadata(for_prefill_graph=True), which also needs '
      'init_forward_metadata_prefill (FlashMLA plans, a model runner): modelled')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'late-layer tail under graphs: enter/exit': (
        ('0.5.13', '0.5.20', 'absent',
         'no late-layer tail (0.5.21+)'),
        ('0.5.21', '0.5.21', 'absent',
         'no prefill-graph tail (0.5.22+)'),
        ('0.5.22', '0.5.22', 'refused',
         ("the prefill-graph tail exists; the adapter drives 0.5.23's seams (the compressor flags,"
          ' row-bucket graphs): kind tail_graphs refused (measured: AttributeError on low_ratios '
          'before the refusal was added)')),
    ),
    'late-layer tail under graphs: DecoderReplayTail': (
        ('0.5.13', '0.5.22', 'absent',
         'row-bucket tail graphs (DecoderReplayTail) are 0.5.23'),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
