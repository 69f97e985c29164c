"""The ``window_graphs`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    (('DECODE graphs under a request window (decode bucket: Raw metadata, in-graph layout one '
      'group per row, padded rows slot 0, IDLE replay commits slot 0, W7)'),
     'absent', 'real',
     ('0.5.12 has no request window: kind window_graphs is refused there (first in 0.5.21). 0.5.23'
      " (features/window_graphs/sglang.py): the decode runner's buffer registry "
      '(build_decode_registry, fill_from: req / positions / locations ZERO, seq_lens FILL_SENTINEL'
      ' 1 = get_cuda_graph_seq_len_fill_value), build_replay_fb_view, '
      'init_forward_metadata_out_graph for the DECODE_OR_IDLE bucket at capture and before every '
      'replay (IDLE substitution, init_forward_metadata_decode -> DSV4RawDecodeMetadata, '
      'replay_cuda_graph_metadata_from, Raw copy_ into the captured metadata), and inside the '
      'captured function init_forward_metadata_in_graph -> make_forward_metadata_from_raw_decode '
      '-> make_core_attn_metadata (torch build_page_table_positions, window_layout with '
      "num_groups=None, torch branch), the resolver's W branch through store_cache, RequestWindow "
      'activate / buffer / commit, on_after_cuda_graph_warmup, model_capture_mode while capturing.'
      ' Modelled: the runner (DecodeCudaGraphRunner needs a model runner: bucket choice, lazy '
      'capture on first use on a graph backend in its constructor state, the capture batch, zero '
      'live out_cache_loc), _create_flashmla_metadata (None: flash_mla is CUDA-only), a mask-free '
      'commit_packed_rows inside the graph, a zero req_to_token table. Eager forwards end with the'
      " release's _activate_request_window. Known: ledger window-a5-mtp-idle-after-graph-replay "
      "(A5 on the release's code)")),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'DECODE graphs under a request window': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window (0.5.21+)'),
        ('0.5.21', '0.5.22', 'refused',
         ("the decode bucket exists; the adapter drives 0.5.23's decode-bucket code "
          '(commit_packed_rows, the buffer registry): kind window_graphs refused')),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
