"""The ``draft_extend_buffer`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


def derive_prep(found: dict[str, str]) -> tuple[str, str] | None:
    """The prep row's answer from a release's recorded probe."""
    if found.get("draft-extend prep (_fill_cuda_graph_swa_out_cache_loc)") == "yes":
        return None
    return ("modelled", "detected: no _fill_cuda_graph_swa_out_cache_loc / "
            "init_forward_metadata_out_graph / the init_forward_metadata_draft_extend(req_pool_"
            "indices, seq_lens, num_tokens_per_req, out_cache_loc) signature the adapter calls")


FACTS = SGLangFacts(
                    derive={"draft-extend metadata prep": derive_prep})
