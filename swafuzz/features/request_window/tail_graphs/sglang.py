"""The ``sglang`` target's late-layer tail under graphs (0.5.23 adapter only): the engine model's
:class:`features.request_window.tail_graphs.engine.TailGraphPath` on top of
:class:`features.request_window.sglang.SGLangWindowPath`.

Real: ``enter_late_layer_tail`` / ``exit_late_layer_tail`` (metadata swap, saved non-padded
counts, ``real_rows_count``, the tail layout's activation) on the adapter's bare backend, the
prefill-graph tail's ``LateLayerTail`` record, and the window path's resolver, store, tail
layout and translation. Modelled: the row-bucket runner (``DecoderReplayTail`` /
``RowBucketGraphRunner`` are CUDA only), the refill of the prefill-graph tail's buffers and the
IDLE rank's commit guard. Per release: ``sglang_facts.json`` beside this file."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec
import torch

from swafuzz import features as registry
from swafuzz.features.request_window.sglang import SGLangWindowPath
from swafuzz.features.request_window.tail_graphs.engine import TailGraphPath
from swafuzz.targets.sglang import features as release_features
from swafuzz.targets.sglang.real import RealBackend


class SGLangTailGraphPath(TailGraphPath, SGLangWindowPath):
    """:class:`TailGraphPath` whose enter / exit of the tail are the release's (module
    docstring)."""

    def _real_batch(self, fb) -> SimpleNamespace:
        return SimpleNamespace(attn_cp_metadata=None,
                               global_num_token_non_padded_cpu=fb.num_non_padded,
                               global_num_token_non_padded=None, num_token_non_padded=None)

    def enter_graph_tail(self, fb):
        sh = self.shim
        fr = self._fr = self._real_batch(fb)
        sh.forward_metadata = self.forward_metadata
        sh.tail_forward_metadata = self.tail_metadata
        sh._bcg_tail_num_token_non_padded = None
        saved = RealBackend.enter_late_layer_tail(sh, fr)
        self.forward_metadata = sh.forward_metadata
        fb.num_non_padded = fr.global_num_token_non_padded_cpu
        return saved

    def exit_graph_tail(self, saved, fb) -> None:
        sh, fr = self.shim, self._fr
        sh.forward_metadata = self.forward_metadata
        RealBackend.exit_late_layer_tail(sh, saved, fr)
        self.forward_metadata = sh.forward_metadata
        fb.num_non_padded = fr.global_num_token_non_padded_cpu

    def set_capacity_tail(self, n: int) -> None:
        """The release's capacity-sized ``LateLayerTail`` (real rows first, padding after)."""
        tm = self.tail_metadata
        t = tm.late_layer_tail
        cap, dev = self.cap_rows, self.device
        idx = torch.zeros(cap, dtype=torch.int64, device=dev)
        idx[:n] = t.token_indices
        pos = torch.zeros(cap, dtype=t.positions.dtype, device=dev)
        pos[:n] = t.positions
        scatter = torch.full((cap,), n, dtype=torch.int64, device=dev)
        scatter[:n] = t.token_indices
        tm.late_layer_tail = msgspec.structs.replace(
            t, token_indices=idx, positions=pos, swa_out_cache_loc=self.cap_swa,
            scatter_indices=scatter, real_rows_count=n, contiguous_start=None)


def window_path_class() -> type:
    """Slot ``SGLangPart.step_path``: the installed release's window path class. 0.5.21 /
    0.5.22 (no fold, no ``replay_len``): :class:`SGLangTailGraphPath`; 0.5.23: that path with
    the prefix-hit, replay and compressor seams of :mod:`features.tail_prefix.sglang` (slot
    ``prefix_path_mixin``, loaded only there: that module imports release modules
    0.5.21 / 0.5.22 lack)."""
    if not release_features.TAIL_PREFIX:
        return SGLangTailGraphPath
    prefix_path = registry.slot("sglang", "prefix_path_mixin")

    class SGLangV41Path(SGLangTailGraphPath, prefix_path):
        """The release's window path with the tail under graphs (features.tail_graphs.sglang)
        and prefix hits, replay and compressor locations (features.tail_prefix.sglang)."""

    return SGLangV41Path
