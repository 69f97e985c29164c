"""Mutant of the resolver under Raw metadata (feature ``raw_metadata``: SGLANG_PREP_IN_CUDA_GRAPH
leaves Raw metadata in place; spec §4.5, §6); reached only by the ``raw_metadata`` kind."""

from __future__ import annotations

from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _CoreAssumedBackend(DSV4Backend):
    def get_swa_out_cache_loc(self, fb):
        n = fb.out_cache_loc.shape[0]
        md = self.forward_metadata
        cached = md.core_attn_metadata.swa_out_cache_loc if md is not None else None
        if self.cache_usable(cached, fb, n):
            return cached
        return self.translate(fb.out_cache_loc)


@mutant("raw_metadata_assumed_core", ("raw_metadata",), "spec §4.5 (forward_metadata None, "
        "Raw metadata or any non-DSV4 object -> no cached location) and §6 (the upstream "
        "resolver test does not cover Raw metadata)", expected=("error",))
class RawMetadataAssumedCore(UnifiedEngine):
    """The resolver reads ``core_attn_metadata`` off any non-None metadata: Raw metadata left
    in place by the draft-extend graph or an eager MTP IDLE crashes the store (an
    AttributeError, a target error)."""

    backend_cls = _CoreAssumedBackend
