"""The ``sglang`` target's DECODE graphs under a request window (0.5.23 only):
:class:`features.request_window.window_graphs.engine.WindowGraphRunner` with the release's
decode-bucket code where it runs on CPU. Real: the buffer registry (``build_decode_registry``,
``fill_from`` before each replay, ``reset_padding`` before a capture), ``build_replay_fb_view``,
``init_forward_metadata_out_graph`` for the DECODE_OR_IDLE bucket at capture and before every
replay (IDLE substitution, Raw metadata copied into the captured one), in the captured function
``init_forward_metadata_in_graph`` (Raw->full down to ``window_layout``, one group per row), the
resolver's W branch through ``store_cache``, ``RequestWindow`` activate / buffer / commit and
``on_after_cuda_graph_warmup``. Modelled: the runner (bucket choice, lazy capture, the capture
batch, zero live ``out_cache_loc``: W8), FlashMLA's plan (None), a mask-free
``commit_packed_rows`` in the graph (:func:`~features.request_window.window_graphs.engine.dense_commit`)
and a zero ``req_to_token``; per release: ``sglang_facts.json`` beside this file. No host code
runs after a replay (as on a GPU): the window's ``layout`` and ``prepared`` key stay."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch
from sglang.srt.model_executor.cuda_graph_buffer_registry import build_decode_registry
from sglang.srt.model_executor.runner.decode_cuda_graph_runner import build_replay_fb_view

from swafuzz.features.request_window.sglang import HISTORY
from swafuzz.features.request_window.window import WinFwdObs
from swafuzz.features.request_window.window_graphs.engine import WindowGraphRunner, dense_commit
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.sglang import features as release_features
from swafuzz.targets.sglang.metadata import NoC128MTP
from swafuzz.targets.sglang.real import RealBackend, bare_backend, real_mode


def _commit_packed_rows_dense(workspace, state, tags, rows_layout, *, page_size, capacity,
                              layout=None):
    """Modelled ``commit_packed_rows`` inside a captured forward (module docstring):
    :func:`features.request_window.window_graphs.engine.dense_commit`."""
    w = workspace.shape[-1]
    dense_commit(rows_layout.req, rows_layout.pos, rows_layout.write_loc, capacity,
                 workspace.view(-1, w), state.view(-1, w), tags)


@contextlib.contextmanager
def _seams(dense_commit: bool):
    """The runner's seams while it drives the release: no FlashMLA plan; the mask-free commit
    inside a captured function."""
    saved = release_features.backend_mod._create_flashmla_metadata, release_features.window_mod.commit_packed_rows
    release_features.backend_mod._create_flashmla_metadata = lambda: None
    if dense_commit:
        release_features.window_mod.commit_packed_rows = _commit_packed_rows_dense
    try:
        yield
    finally:
        release_features.backend_mod._create_flashmla_metadata, release_features.window_mod.commit_packed_rows = saved


class SGLangWindowGraphRunner(WindowGraphRunner):
    """:class:`features.window_graphs.engine.WindowGraphRunner` with 0.5.23's decode-bucket metadata,
    padding, in-graph layout, resolver and window (module docstring)."""

    def __init__(self, path):
        super().__init__(path)  # its static req / seq buffers are replaced by the registry's below
        dev, cfg = path.device, path.cfg
        mx = max(self.buckets)
        bk = self.bk = bare_backend(path.real_pool)
        # the constructor's state (upstream captures at start-up): no MTP, no compressed layers,
        # no encoder replay, a zero request table
        cap_len = cfg.full_pages * cfg.page_size
        for k, v in dict(
                tail_forward_metadata=None, needs_cpu_seq_lens=False, mtp_enabled=False, topk=0,
                speculative_num_steps=1, _early_verify_metadata_ids=set(),
                cuda_graph_metadata_of_bucket_and_bs={
                    b: {} for b in release_features.backend_mod._GraphBucket},
                online_c128_mtp=NoC128MTP(), page_size=path.P,
                cuda_int32_kwargs={"dtype": torch.int32, "device": dev}, present_ratios=(),
                low_ratios=(), has_c4=False, has_c128=False, index_topk=512, trtllm_attn=False,
                encoder_replay=False, encoder_row_floor=None, MAX_SEQ_LEN_FOR_CAPTURE=cap_len,
                req_to_token=torch.zeros(cfg.window_slots + 1, cap_len, dtype=torch.int32,
                                         device=dev)).items():
            setattr(bk, k, v)
        self.fill_value = RealBackend.get_cuda_graph_seq_len_fill_value(bk)
        self.registry = build_decode_registry(
            device=torch.device(dev), max_bs=mx, max_num_token=mx,
            seq_len_fill_value=self.fill_value, cache_loc_dtype=torch.int64, share_pool=False,
            register_global_num_tokens=False)
        self.static_req = self.registry.get_slot("req_pool_indices").buffer
        self.static_seq = self.registry.get_slot("seq_lens").buffer
        self.static_pos = self.registry.get_slot("positions").buffer
        self.static_loc = self.registry.get_slot("out_cache_loc").buffer
        self._cap_batch: dict[int, SimpleNamespace] = {}

    # -- views -----------------------------------------------------------------------------------
    def _view(self, B: int, mode: ForwardMode, live_loc: torch.Tensor | None) -> SimpleNamespace:
        """The capture batch the release's prep reads (``capture_prepare``'s, modelled): the
        registry's ``[:B]`` slices in mode DECODE."""
        seq = self.static_seq[:B]
        return SimpleNamespace(
            batch_size=B, forward_mode=real_mode("DECODE"), actual_forward_mode=real_mode(mode.name),
            req_pool_indices=self.static_req[:B], seq_lens=seq,
            seq_lens_sum=int(seq.sum()), seq_lens_cpu=None, positions=self.static_pos[:B],
            out_cache_loc=self.static_loc[:B] if live_loc is None else live_loc, spec_info=None)

    # -- in-graph ------------------------------------------------------------------------------
    def run_once(self, B: int) -> None:
        """The captured function: the release's in-graph upgrade, then per layer its store
        (resolver W) and the window's commit; a workspace snapshot per layer."""
        p, bk = self.path, self.bk
        view = self._cap_batch[B]
        HISTORY["window"] = p.W
        with _seams(dense_commit=True):
            RealBackend.init_forward_metadata_in_graph(bk, view)
            md = bk.forward_metadata
            lay = md.core_attn_metadata.request_window_layout
            self.layouts[B] = lay
            p.forward_metadata = md
            fb = ForwardBatch(ForwardMode.DECODE, B, view.out_cache_loc, view.seq_lens,
                              lay.pos)
            for layer in range(p.cfg.layers):
                p.store(layer, fb, self.static_rows[layer][:B])
                p.commit(layer, fb)
                self.snaps[B][layer].copy_(p.window.workspace.kv_buffer[0])
            RealBackend.on_after_cuda_graph_warmup(bk)

    # -- out-graph -----------------------------------------------------------------------------
    def load_capture_state(self) -> None:
        """The registry's buffers as the runner captures from them: every slot reset over its
        whole length by its padding policy (req 0, seq 1, positions 0, locations 0)."""
        for name in self.registry.slot_names():
            slot = self.registry.get_slot(name)
            slot.reset_padding(0, slot.buffer.shape[-1])

    def capture(self, B: int) -> None:
        from sglang.srt.model_executor.runner_utils import capture_mode

        self.load_capture_state()
        p = self.path
        self.snaps[B] = [torch.empty_like(p.window.workspace.kv_buffer[0])
                         for _ in range(p.cfg.layers)]
        view = self._cap_batch[B] = self._view(B, ForwardMode.DECODE, None)
        with capture_mode.model_capture_mode(), _seams(dense_commit=False):
            RealBackend.init_forward_metadata_out_graph(self.bk, view, in_capture=True)
            self.handles[B] = self.executor.capture(lambda: self.run_once(B))

    def load_batch(self, mode: ForwardMode, slots: list[int], seq: list[int]) -> None:
        """The release's ``fill_from`` of the live batch (its requests, ``raw_bs = len(slots)``
        even when a DP rank's ``max(rank_tokens)`` chose the bucket: the registry pads the rest;
        IDLE: its ``n`` rows of slot 0, seq 1), then its out-graph prep (IDLE substitution, Raw
        metadata copied into the captured one)."""
        B, n = self._cur
        dev = self.static_req.device
        if mode != ForwardMode.IDLE:
            n = len(slots)  # a DP rank's own requests; the bucket came from max(rank_tokens)

        def t(v):
            return torch.tensor(v, dtype=torch.int64, device=dev)

        if mode == ForwardMode.IDLE:
            slots, seq = [0] * n, [1] * n
        live = SimpleNamespace(
            forward_mode=real_mode(mode.name), batch_size=n, req_pool_indices=t(slots),
            seq_lens=t(seq), seq_lens_sum=sum(seq), seq_lens_cpu=None, max_seq_len_host=None,
            positions=t([s - 1 for s in seq]), out_cache_loc=t([0] * n), input_ids=t([0] * n),
            out_cache_loc_virtual=None, kv_loc_plan=None, kv_loc_cols=None,
            max_seq_len_override=None, spec_info=None, lora_ids=None,
            can_run_decode_cuda_graph=True)
        self.registry.fill_from(live, raw_bs=n, padded_bs=B, raw_num_tokens=n,
                                padded_num_tokens=B)
        reg = self.registry
        buffers = SimpleNamespace(mamba_track_indices=None, encoder_lens=None,
                                  **{k: reg.get_slot(k).buffer for k in (
                                      "input_ids", "positions", "req_pool_indices", "seq_lens",
                                      "seq_lens_cpu")})
        view = build_replay_fb_view(
            forward_batch=live, buffers=buffers, bs=B, raw_bs=n, num_tokens=B,
            global_num_tokens_cpu=None, seq_len_fill_value=self.fill_value,
            capture_forward_mode=real_mode("DECODE"), is_encoder_decoder=False)
        with _seams(dense_commit=False):
            RealBackend.init_forward_metadata_out_graph(self.bk, view)

    def after_replay(self) -> None:
        """Nothing: a replay runs no host code (the window's ``prepared`` key stays)."""

    def run(self, i: int, mode: ForwardMode, slots: list[int], seq: list[int], n: int
            ) -> WinFwdObs:
        self._cur = (self.bucket_for(n), n)  # read by the out-graph prep (load_batch)
        return super().run(i, mode, slots, seq, n)
