"""Mutants of DP attention (feature ``dp``: MLP-sync MAX_LEN re-padding of decode and speculative
batches, the EXTEND rewrite; spec §5.4, §6, PR #27091). Each swaps the engine's
:class:`features.dp.engine.DPAttention`, the resolver's length check, or ``can_run``; reached
only by the ``dp_padded`` / ``dp_spec`` kinds.
"""

from __future__ import annotations

from swafuzz.features.dp.engine import DPAttention
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.mutants import mutant


class _NoLengthCheckBackend(DSV4Backend):
    def cache_usable(self, cached, fb, n):
        return cached is not None and not fb.forward_mode.is_idle()


@mutant("no_length_check", ("dp_padded",), "spec §9.2 / §5.4 (PR #27091: DP re-padding)",
        expected=("contracts",))
class NoLengthCheck(UnifiedEngine):
    """The resolver without its length check: after DP re-padding the cached location (of the
    unpadded batch) is used for a batch of another length."""

    backend_cls = _NoLengthCheckBackend


class _NeverPadDP(DPAttention):
    def pad_inputs_to_size(self, fb, num_tokens, batch_size=None):
        return None


@mutant("dp_never_pads", ("dp_padded",), "spec §5.4 (2)-(4) (MAX_LEN padding, "
        "_pad_inputs_to_size); issue 10 self-report experiment", expected=("exec_path",))
class DPNeverPads(UnifiedEngine):
    """DP attention without ``_pad_inputs_to_size``: the rank forwards only its own rows."""

    rank_pad_cls = _NeverPadDP


class _VerifyNotReboundDP(DPAttention):
    def pad_inputs_to_size(self, fb, num_tokens, batch_size=None):
        if fb.forward_mode != ForwardMode.TARGET_VERIFY:
            return super().pad_inputs_to_size(fb, num_tokens, batch_size)
        loc = fb.out_cache_loc
        super().pad_inputs_to_size(fb, num_tokens, batch_size)
        fb.out_cache_loc = loc


@mutant("dp_verify_not_rebound", ("dp_spec",), "spec §5.4 (4) and §6 (DP re-padding of "
        "speculative batches rebinds out_cache_loc; 'spec-v2 and DP padding rebind "
        "out_cache_loc', PR #27091)", expected=("exec_path",))
class DPVerifyNotRebound(UnifiedEngine):
    """DP re-padding of a target-verify batch pads ``seq_lens`` / ``positions`` but does not
    rebind ``out_cache_loc``: the stores write the unpadded rows (the stale-shape case)."""

    rank_pad_cls = _VerifyNotReboundDP


@mutant("dp_extend_replays_graph", ("dp_spec",), "spec §5.4 (3) (a batch rewritten to EXTEND "
        "because another DP rank extends cannot run a decode/verify graph; can_run's "
        "extend-in-batch guard)", expected=("exec_path",))
class DPExtendReplaysGraph(UnifiedEngine):
    """``can_run`` without the extend-in-batch guard: a batch DP rewrote to EXTEND replays its
    decode/verify graph."""

    def can_run_graph(self, step, fb, n):
        return self.use_graph(step, n)


# -- server level: the release's padding, patched in the attention-TP ranks' processes
mutant("server_pad_live_loc", level="server", kinds=("server_attn_tp",),
       patch="swafuzz.features.dp.sglang_server_pad:pad_live_loc",
       source="spec §9.5 (padded rows not steered to the dummy slot), in the release's "
              "ForwardBatch._pad_inputs_to_size (attention-TP ranks)")
mutant("server_pad_seq_lens_zero", level="server", kinds=("server_attn_tp",),
       patch="swafuzz.features.dp.sglang_server_pad:pad_seq_lens_zero",
       source="spec §5.4 (4) (padded rows' seq_lens hold the backend's fill value, 1 for "
              "DeepSeek-V4), in the release's ForwardBatch._pad_inputs_to_size (attention-TP "
              "ranks)")
# -- server level: the release's model-runner dispatch of an attention-DP rank's IDLE forward
mutant("server_idle_keeps_metadata", level="server", kinds=("server_dp_overlap",),
       patch="swafuzz.features.dp.sglang_server_idle:idle_keeps_stale_metadata",
       source="the release's EagerRunner._execute_idle without its unpadded-idle reset of the "
              "attention backend's forward_metadata (its comment: stale metadata is an SWA "
              "use-after-free on req_pool; absent from 0.5.12's ModelRunner.forward_idle)")
mutant("server_idle_padded_no_init", level="server", kinds=("server_dp_overlap",),
       patch="swafuzz.features.dp.sglang_server_idle:padded_idle_skips_metadata_init",
       source="PR #15227 reverted (a DP-padded IDLE batch runs on the previous batch's "
              "attention metadata), in the release's EagerRunner._execute_idle")
# -- server level: the release's decode->extend conversion of an attention-DP rank's DECODE
mutant("server_dp_convert_prefix_from_tokens", level="server", kinds=("server_dp_overlap",),
       patch="swafuzz.features.dp.sglang_server_convert:prefix_from_token_list",
       source="PR #37505 reverted (the DP decode->extend conversion's extend prefix from the "
              "request's token list, len(origin_input_ids) + len(output_ids), the overlap "
              "arm's delta 0: prefix_len == seq_len once the output lag has drained), in the "
              "release's ScheduleBatch.convert_decode_to_extend")
