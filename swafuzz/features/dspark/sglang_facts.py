"""The ``dspark`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('target verify under a request window (rows, layout num_groups = bs, W resolver, commit)',
     'absent', 'real',
     ("0.5.23 (features/dspark/sglang.py): the backend's expand_extend_with_same_length gives the "
      "rows' slots and positions, window_layout (torch) the layout with num_groups = bs, the real "
      'resolver (W) and RequestWindow.commit the rest; kind dspark_verify, eager only. 0.5.12 has '
      'no window: the kind is refused')),
    ('early verify metadata (_install_early_verify_metadata, DSpark target verify graph)',
     'absent', 'modelled',
     ('its full build (make_forward_metadata_from_raw_verify) runs CUDA metadata kernels and it is'
      " reached only from the target verify graph's out-graph prep (CUDA, DSpark, no DP "
      'attention): the adapter sets swa_out_cache_loc = None under the window, the value the '
      'installer leaves. The verify graph (kind dspark_verify_graph: early metadata built on the '
      'host and copied into the captured metadata before every replay) runs on unified only; a '
      'window Case with graph verify steps under a graph executor raises TargetUnavailable on '
      'sglang, and the kind is left out of sglang runs')),
    ('DP-padded EXTEND under a request window (MLP-sync MAX_LEN padding rows)',
     'absent', 'real',
     ("0.5.23: the eager EXTEND's expand_prefill_casually (torch) with padded_num_tokens, the "
      'floors through _pad_rows and window_layout with num_groups = requests and no padded_rows '
      '(no request_window_live_rows on the eager path); the padding itself '
      '(prepare_mlp_sync_batch) is modelled: full location 0, position 0. Kind window_dp_extend; '
      'as driven, the release joins the padding rows to the last real run '
      '(docs/notes/issue12-dspark.md)')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'target verify under a request window': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window (0.5.21+)'),
        ('0.5.21', '0.5.22', 'real',
         'measured on 0.5.22: kind dspark_verify, 15 cases, 0 findings'),
    ),
    'early verify metadata': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window (0.5.21+)'),
    ),
    'DP-padded EXTEND under a request window': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window (0.5.21+)'),
        ('0.5.21', '0.5.22', 'refused',
         ("the kind's extends fold encoder replay (0.5.23); these releases replay in a forward of "
          'their own: kind window_dp_extend refused')),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
