"""ForwardMode predicates and graph buckets (spec §3)."""

from __future__ import annotations

import pytest

from swafuzz.targets.forward_mode import (
    ForwardBatch,
    ForwardMode,
    GraphBucket,
    logical_forward_mode,
)

M = ForwardMode


def members(pred) -> set[ForwardMode]:
    return {m for m in M if pred(m)}


def test_members_in_order():
    assert [m.name for m in M] == [
        "EXTEND", "DECODE", "MIXED", "IDLE", "TARGET_VERIFY", "DRAFT_EXTEND", "DRAFT_EXTEND_V2",
        "PREBUILT", "SPLIT_PREFILL", "DLLM_EXTEND"]


def test_predicates():
    ext = {M.EXTEND, M.MIXED, M.TARGET_VERIFY, M.SPLIT_PREFILL, M.DLLM_EXTEND, M.DRAFT_EXTEND}
    assert members(M.is_extend) == ext
    assert members(lambda m: m.is_extend(True)) == ext | {M.DRAFT_EXTEND_V2}
    assert members(M.is_prefill) == ext
    assert members(M.is_context_parallel_extend) == {M.EXTEND, M.MIXED}
    assert members(M.is_decode_or_idle) == {M.DECODE, M.IDLE}
    assert members(M.is_cuda_graph) == {M.DECODE, M.TARGET_VERIFY, M.IDLE, M.DLLM_EXTEND}
    assert members(M.is_cpu_graph) == {M.DECODE}
    assert members(M.is_draft_extend) == {M.DRAFT_EXTEND}
    assert members(lambda m: m.is_draft_extend(True)) == {M.DRAFT_EXTEND, M.DRAFT_EXTEND_V2}
    assert members(M.is_extend_or_draft_extend_or_mixed) == {
        M.EXTEND, M.MIXED, M.SPLIT_PREFILL, M.DRAFT_EXTEND}
    assert members(M.is_extend_without_speculative) == {
        M.EXTEND, M.MIXED, M.SPLIT_PREFILL, M.DLLM_EXTEND}


def test_graph_bucket_of():
    assert GraphBucket.of(M.DECODE) is GraphBucket.of(M.IDLE) is GraphBucket.DECODE_OR_IDLE
    assert GraphBucket.of(M.TARGET_VERIFY) is GraphBucket.TARGET_VERIFY
    assert GraphBucket.of(M.DRAFT_EXTEND_V2) is GraphBucket.DRAFT_EXTEND
    with pytest.raises(NotImplementedError, match="EXTEND"):
        GraphBucket.of(M.EXTEND)


def test_logical_mode():
    fb = ForwardBatch(M.EXTEND, 1, None, None, None, original_forward_mode=M.DECODE)
    assert logical_forward_mode(fb) is M.DECODE
    assert logical_forward_mode(fb.view(forward_mode=M.IDLE)) is M.IDLE
    assert logical_forward_mode(fb.view(original_forward_mode=None)) is M.EXTEND
