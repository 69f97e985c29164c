"""The ``tail_prefix`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers, its probe of the installed release
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('prefix hit under a late-layer tail: swa_reprefill_tail_tokens, _req_radix_key',
     'absent', 'real',
     ('0.5.23: UnifiedRadixCache.swa_reprefill_tail_tokens on a cache built without __init__ (SWA '
      "component with the Case's window, decoder SWA bounded replay iff the pool has a tail, no "
      'session lending a record) and mem_cache/common.py _req_radix_key, whose key limit caps the '
      "hit; the tree's page-aligned match of the capped key is modelled (the Case names the "
      'matched length). 0.5.12 has no tail (kind tail_prefix refused)')),
    ('compressor write locations: _compressor_out_loc, c4 out loc',
     'absent', 'real',
     ('0.5.23 DeepseekV4AttnBackend._compressor_out_loc (static) and the c4 output of '
      'kernels/ops/attention/dsv4/metadata_kernel.py init_compression_metadata (Triton: the '
      "interpreter with TRITON_INTERPRET=1 or a GPU; otherwise the model's formula); whether the "
      'ratio-1/2 source compressors run (forward_low_ratio_sources) is a modelled flag')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'prefix hit under a late-layer tail': (
        ('0.5.13', '0.5.20', 'absent',
         'no late-layer tail (0.5.21+)'),
        ('0.5.21', '0.5.22', 'refused',
         ("the adapter drives 0.5.23's seams (replay_len, _fold_batch, _compressor_out_loc): kind "
          'tail_prefix refused')),
    ),
    'compressor write locations': (
        ('0.5.13', '0.5.20', 'absent',
         'no encoder SWA replay (0.5.21+)'),
        ('0.5.21', '0.5.22', 'refused',
         "driven with 0.5.23's seams only"),
    ),
}


def probe(found) -> dict:
    """The seams features/tail_prefix/sglang.py drives (0.5.23 names): replay_len, the fold and
    replay batch builders, the radix cap, the compressor location helper."""
    return {"TAIL_PREFIX": bool(found.FOLD) and all(hasattr(found.replay_mod, n) for n in (
        "replay_len", "_reset_windows_and_collect_hits", "_fold_batch", "_build_replay_batch"))
        and hasattr(found.backend_mod.DeepseekV4AttnBackend, "_compressor_out_loc")}


FACTS = SGLangFacts(table=TABLE, ranges=RANGES, probe=probe)
