"""The ``prefill_graphs`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    (('breakable prefill graphs under a request window (admit / extend exec graph: padded layout, '
      'live-row mask, in-place refresh, W7)'),
     'absent', 'real',
     ('0.5.12 has none (0.5.21/0.5.22 reject prefill graphs with encoder replay; first in 0.5.23):'
      ' kind prefill_graphs is refused there. 0.5.23 (features/prefill_graphs/sglang.py): '
      'expand_prefill_causally (padding rows repeat the last request, seq 1), window_layout with '
      'num_groups = min(S + 1, T) and padded_rows = T over the live rows (torch branch), '
      'DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_ -> WindowLayout.copy_ on the '
      "bucket's captured metadata (a stand-in record holding the layout), RequestWindow and the "
      "resolver's W branch through store_cache in the captured segments (model_capture_mode set "
      'while capturing). Modelled: the runner (PrefillCudaGraphRunner needs a model runner): '
      'capture batch, one captured segment per layer and the eager commit break, bucket choice, '
      "padding rows' floors")),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'breakable prefill graphs under a request window': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window (0.5.21+)'),
        ('0.5.21', '0.5.22', 'absent',
         ('prefill graphs were rejected with encoder replay (addendum §4); window_layout has no '
          'padded_rows')),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
