"""The ``late_tail`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('late-layer tail: late_layer_tail_layout, LateLayerTail, DSV4Metadata.late_layer_tail',
     'absent', 'real',
     ("the release's layout function (per-request last min(W, n) rows, floors) and records; "
      '_build_late_layer_tail_metadata and enter/exit_late_layer_tail need a ForwardBatch with '
      'DP/CP state and are modelled (a swap of forward_metadata); 0.5.12 has no tail')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'late-layer tail': (
        ('0.5.13', '0.5.20', 'absent',
         'first in 0.5.21'),
        ('0.5.21', '0.5.22', 'real',
         'late_layer_tail_layout in kernels/ops/attention/dsv4_attn_metadata_kernels.py'),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
