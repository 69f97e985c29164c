"""The ``dsv4_layout`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


def derive_store(found: dict[str, str]) -> tuple[str, str] | None:
    """The V4 store row's answer from a release's recorded probe (the store's module)."""
    mod = found.get("V4 fused store module", "")
    if mod == "sglang.kernels.ops.kvcache.triton_store_cache":
        return None
    if mod.startswith("sglang."):
        return "real", f"triton_fused_store_flashmla from {mod} (detected)"
    return ("real", "quant_to_nope_fp8_rope_bf16_pack_triton + SetKAndS.triton (detected: no "
            "fused Triton store)")


FACTS = SGLangFacts(
                    derive={"store kernel, pool layout dsv4": derive_store})
