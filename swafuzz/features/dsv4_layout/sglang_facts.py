"""The ``dsv4_layout`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('store kernel, pool layout dsv4 (Triton V4 store)',
     'real', 'real',
     ("the release's Triton V4-layout store quantizes and scatters (targets/sglang/store.py): "
      '0.5.12 quant_to_nope_fp8_rope_bf16_pack_triton + SetKAndS.triton, 0.5.23 '
      "triton_fused_store_flashmla, at the locations SGLang's code passes; the CUDA JIT store (the"
      " NVIDIA default, eps 1e-4 instead of 1e-8) is not run. On CPU the Triton interpreter's "
      "fp32->fp8e4nv cast is replaced by a round-to-nearest-even one (the interpreter's own rounds"
      ' ties away, loses carries and truncates subnormals)')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'store kernel, pool layout dsv4': (
        ('0.5.13', '0.5.19', 'real',
         'triton_fused_store_flashmla from sglang.jit_kernel'),
    ),
}


def derive_store(found: dict[str, str]) -> tuple[str, str] | None:
    """The V4 store row's answer from a release's recorded probe (the store's module)."""
    mod = found.get("V4 fused store module", "")
    if mod == "sglang.kernels.ops.kvcache.triton_store_cache":
        return None
    if mod.startswith("sglang."):
        return "real", f"triton_fused_store_flashmla from {mod} (detected)"
    return ("real", "quant_to_nope_fp8_rope_bf16_pack_triton + SetKAndS.triton (detected: no "
            "fused Triton store)")


FACTS = SGLangFacts(table=TABLE, ranges=RANGES,
                    derive={"store kernel, pool layout dsv4": derive_store})
