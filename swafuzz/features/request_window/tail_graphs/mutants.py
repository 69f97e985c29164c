"""Mutants of the late-layer tail under graphs (feature ``tail_graphs``; addendum §5 T1/T4, §6
A3/A9): one :class:`TailGraphPath` or :class:`TailBucketRunner` method overridden
(:mod:`features.request_window.mutants`); kind ``tail_graphs``, the only one with ``tail_exec``."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.engine import path_with
from swafuzz.features.request_window.tail_graphs.engine import TailBucketRunner, TailGraphPath
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _BucketRows(TailBucketRunner):
    def k_rows(self, layer, live, T):
        static = self.static_rows[layer]
        static[:live.shape[0]].copy_(live)
        return static[:T]


@mutant("tail_graph_k_bucket_rows", ("tail_graphs",), "addendum §6 A3 and §3 T (0.5.23 "
        "deepseek_v4_replay_tail._tail_kv_store slices K to global_num_token_non_padded_cpu, "
        "which must equal len(tail loc))", expected=("contracts",))
class TailGraphKBucketRows(UnifiedEngine):
    """The row-bucket graph's store break hands the store the bucket's padded K rows instead of
    slicing them to ``global_num_token_non_padded_cpu``: more K rows than tail locations."""

    step_path_cls = path_with(TailGraphPath, tail_runner_cls=_BucketRows)


class _CapacityKeptPath(TailGraphPath):
    def zero_capacity_tail(self, n):
        """Refill without zeroing: rows past ``real_rows_count`` keep the previous tail's full
        locations (and so translate to its SWA slots)."""


@mutant("tail_capacity_not_zeroed", ("tail_graphs",), "addendum §5 T1 and §3 T (0.5.22 "
        "_build_late_layer_tail_metadata(for_prefill_graph=True): loc_buf[real_rows:].zero_(), "
        "padding rows write the dummy slot); the PR #24743 class (padded rows not re-zeroed)",
        expected=("tail_graph", "tail", "pool_bytes", "write_set"))
class TailCapacityNotZeroed(UnifiedEngine):
    """The prefill-graph tail's persistent location buffer is refilled without zeroing the rows
    past ``real_rows_count``: padding rows of a smaller tail write the SWA slots a larger one
    left."""

    step_path_cls = _CapacityKeptPath


class _ExitKeepsTailPath(TailGraphPath):
    def exit_graph_tail(self, saved, fb):
        """The graph branch returns without ``exit_late_layer_tail``: the tail metadata stays
        the forward metadata and the batch keeps the tail's non-padded count."""


@mutant("tail_graph_exit_keeps_tail", ("tail_graphs",), "addendum §5 T4 and §2.4 (0.5.23 "
        "DeepseekV4AttnBackend.exit_late_layer_tail restores forward_metadata, CP metadata and "
        "the non-padded counts enter_late_layer_tail saved)", expected=("tail_graph",))
class TailGraphExitKeepsTail(UnifiedEngine):
    """The graph tail is left without restoring ``forward_metadata`` and the saved non-padded
    counts (``exit_late_layer_tail`` skipped)."""

    step_path_cls = _ExitKeepsTailPath


class _Relabelled(TailBucketRunner):
    def commit_allowed(self, fb, idle_rank):
        return not fb.forward_mode.is_idle()


@mutant("tail_graph_idle_relabelled", ("tail_graphs",), "addendum §6 A9 and §5 W6 (0.5.23 "
        "DecoderReplayTail.run / _run_layers_eagerly copy an IDLE batch as EXTEND; "
        "DeepseekV4AttnBackend.forward commits unless forward_mode is IDLE)", expected=("window",))
class TailGraphIdleRelabelled(UnifiedEngine):
    """An IDLE DP rank replaying a peer's tail bucket commits its active (idle) layout in every
    late layer: the graph relabels its batch EXTEND, which defeats the commit's IDLE guard."""

    step_path_cls = path_with(TailGraphPath, tail_runner_cls=_Relabelled)


class _OwnBucket(TailBucketRunner):
    def bucket_from(self, own, peers):
        return own


@mutant("tail_graph_dp_own_bucket", ("tail_graphs",), "0.5.23 DecoderReplayTail.run / "
        "RowBucketGraphRunner.run (under DP attention every rank replays the bucket of "
        "max(dp_rows): bucket_from); addendum §2.4 late-layer DP (#39512)",
        expected=("tail_graph",))
class TailGraphDpOwnBucket(UnifiedEngine):
    """A DP rank replays the bucket of its own tail rows, not the largest rank's (every rank
    must replay the same bucket for the collectives)."""

    step_path_cls = path_with(TailGraphPath, tail_runner_cls=_OwnBucket)


class _ReboundPath(TailGraphPath):
    def fill_capacity(self, fb):
        self.cap_swa = torch.empty_like(self.cap_swa)
        super().fill_capacity(fb)


@mutant("tail_prefill_buffer_rebound", ("tail_graphs",), "addendum §3 T (in the prefill graph "
        "the tail's locations are the persistent capacity-sized buffer; 0.5.22 "
        "_prefill_graph_tail_buffers: the captured late-layer stores read persistent buffers, "
        "refilled in place by copy_) and spec §4.2 (graphs read the tensors they captured)",
        expected=("capture_freeze", "agreement", "pool_bytes", "tail", "write_set"))
class TailPrefillBufferRebound(UnifiedEngine):
    """The prefill-graph tail's SWA location buffer is a fresh tensor per forward instead of
    refilled in place: the captured late-layer stores keep reading the buffer of the forward
    they were captured in (graph executors only)."""

    step_path_cls = _ReboundPath
