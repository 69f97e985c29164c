"""The ``ring_draft`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('ring: DSpark draft block rows (draft_block)',
     'absent', 'real',
     ('0.5.23 (features/ring_draft/sglang.py): DeepseekV4AttnBackend._dspark_seq_lens_casual '
      '(build_block_seq_lens_causal, torch branch on CPU) and _dspark_swa_ring_out_cache_loc '
      "(swa_ring_rows) stamp the block's rows, read back through the release's store_cache and "
      'resolver (cached branch). Modelled: the per-request slots (upstream '
      "req_pool_indices.repeat_interleave(block_size); the harness's ring tables), the block's "
      "forward batch, and its graph runner (the model's TARGET_VERIFY runner on the draft model; "
      "the release's helpers run inside the tape-captured graph). 0.5.12: no ring, no DSpark. Not "
      'run with a ring in 0.5.23 and refused by the Case: multi-step draft decode (DSpark runs '
      'none) and the draft-extend SWA buffer (filled through M)')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'ring: DSpark draft block rows': (
        ('0.5.13', '0.5.22', 'absent',
         'no _dspark_swa_ring_out_cache_loc'),
    ),
}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
