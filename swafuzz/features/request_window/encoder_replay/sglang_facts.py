"""The ``encoder_replay`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


def probe(found) -> dict:
    """Encoder SWA replay folded into the extend (``fold_encoder_swa_replay``, 0.5.23); 0.5.21 /
    0.5.22 replay in a forward of their own (``run_encoder_swa_replay``), which the Case's
    ``extend(replay=...)`` (the 0.5.23 fold) does not describe."""
    replay = (found.first_module("sglang.srt.model_executor.encoder_swa_replay")
              if found.WINDOW_MODULE else None)
    return {"replay_mod": replay,
            "FOLD": replay is not None and hasattr(replay, "fold_encoder_swa_replay")}


def describe(found) -> list[tuple[str, str]]:
    return [("encoder replay folded into the extend (fold_encoder_swa_replay)",
             "yes" if found.FOLD else "no")]


FACTS = SGLangFacts(probe=probe, describe=describe)
