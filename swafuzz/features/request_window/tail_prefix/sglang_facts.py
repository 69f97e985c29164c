"""The ``tail_prefix`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


def probe(found) -> dict:
    """The seams features/request_window/tail_prefix/sglang.py drives (0.5.23 names): replay_len, the fold and
    replay batch builders, the radix cap, the compressor location helper."""
    return {"TAIL_PREFIX": bool(found.FOLD) and all(hasattr(found.replay_mod, n) for n in (
        "replay_len", "_reset_windows_and_collect_hits", "_fold_batch", "_build_replay_batch"))
        and hasattr(found.backend_mod.DeepseekV4AttnBackend, "_compressor_out_loc")}


FACTS = SGLangFacts(probe=probe)
