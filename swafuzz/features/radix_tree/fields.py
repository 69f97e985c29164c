"""The radix cache's server-level Case field: which of the release's tree cores runs the unified
radix cache (its ``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND``; read from the environment when the
cache is built, not ServerArgs). Contract: ``SEMANTICS.md`` here."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField("model", "tree_core", "str", "rust",
              "SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND: the unified radix cache's tree core "
              "(the release's default rust; python: its Python core, the rust one's fallback)",
              choices=("rust", "python")),
)
