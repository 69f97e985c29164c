"""The ``draft_extend_buffer`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('draft-extend metadata prep (out-graph bucket, eager)',
     'modelled', 'real',
     ("0.5.23 (targets/sglang/metadata.py): the release's init_forward_metadata_out_graph for the "
      "bucket (no locations at capture, IDLE substitution, 0-padding to the bucket's rows) and its"
      ' init_forward_metadata_draft_extend with _fill_cuda_graph_swa_out_cache_loc (PR #34890: '
      'buffer refilled, tail zeroed) or the eager-miss translation; eager: the same builder, then '
      "the real in-graph stamp. Adapter seams: make_core_attn_metadata returns the harness's core "
      "metadata around the release's out_loc (page table and SWA page indices are read-side, not "
      "built), no c128 MTP state, the bucket's persistent metadata kept by the harness (same "
      'check/copy/assign rules). As driven here the release never stores through that buffer: '
      'capture hands the prep no locations and eager re-stamps')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'draft-extend metadata prep': (
        ('0.5.13', '0.5.19', 'modelled',
         'no _fill_cuda_graph_swa_out_cache_loc (checked absent in 0.5.16, present in 0.5.20)'),
    ),
}


def derive_prep(found: dict[str, str]) -> tuple[str, str] | None:
    """The prep row's answer from a release's recorded probe."""
    if found.get("draft-extend prep (_fill_cuda_graph_swa_out_cache_loc)") == "yes":
        return None
    return ("modelled", "detected: no _fill_cuda_graph_swa_out_cache_loc / "
            "init_forward_metadata_out_graph / the init_forward_metadata_draft_extend(req_pool_"
            "indices, seq_lens, num_tokens_per_req, out_cache_loc) signature the adapter calls")


FACTS = SGLangFacts(table=TABLE, ranges=RANGES,
                    derive={"draft-extend metadata prep": derive_prep})
