"""The ``sglang`` target's breakable prefill graphs under a request window (0.5.23 only):
:class:`features.request_window.prefill_graphs.engine.PrefillGraphRunner` with the release's
pieces where they run on CPU.

Real: ``expand_prefill_causally`` (torch branch), ``window_layout(req[:live], ...,
num_groups=min(S + 1, T), padded_rows=T)`` as ``make_core_attn_metadata`` calls it under
``use_prefill_cuda_graph``, ``DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_`` (and
``WindowLayout.copy_``, W7) on a stand-in core metadata, and ``RequestWindow`` with the
resolver's W branch through ``store_cache`` inside the captured segments, under the release's
``model_capture_mode`` while capturing. Modelled: the runner (capture batch, segments, breaks,
replay order), padding rows' floors (0) and the history copy of every captured segment. Per
release: ``sglang_facts.json`` beside this file."""

from __future__ import annotations

from dataclasses import fields
from types import SimpleNamespace

import torch

from swafuzz.features.request_window.prefill_graphs.engine import PrefillGraphRunner
from swafuzz.features.request_window.sglang import real_window_layout
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.sglang import features as release_features


def _core(layout, page_size: int):
    """A ``DSV4AttnMetadata`` stand-in: every dataclass field None, the fields the refresh
    asserts equal set alike, and the request-window layout."""
    core = SimpleNamespace(**{f.name: None for f in fields(release_features.backend_mod.DSV4AttnMetadata)})
    core.index_topk, core.page_size, core.cuda_int32_kwargs = 0, page_size, {}
    core.present_ratios, core.low_ratios = (), ()
    core.request_window_layout = layout
    return core


class SGLangPrefillRunner(PrefillGraphRunner):
    """:class:`features.prefill_graphs.engine.PrefillGraphRunner` with the release's layout, padding and
    refresh (module docstring)."""

    def __init__(self, path):
        super().__init__(path)
        self.cores: dict[int, SimpleNamespace] = {}

    def expand(self, rows, T):
        """The release's ``expand_prefill_causally`` over the batch's requests (runs of one
        slot): per row the request slot and ``seq_lens_casual - 1``; floors modelled."""
        reqs: list[list[int]] = []  # [slot, rows, last position]
        for slot, pos, _ in rows:
            if reqs and reqs[-1][0] == slot:
                reqs[-1][1] += 1
                reqs[-1][2] = pos
            else:
                reqs.append([slot, 1, pos])
        dev = self.path.device
        seq = [r[2] + 1 for r in reqs]
        ext = [r[1] for r in reqs]
        starts = [sum(ext[:k]) for k in range(len(ext))]

        def t(v):
            return torch.tensor(v, dtype=torch.int64, device=dev)

        res = release_features.tail_mod.expand_prefill_causally(
            req_pool_indices=t([r[0] for r in reqs]), seq_lens=t(seq), extend_seq_lens=t(ext),
            extend_start_loc=t(starts), seq_lens_cpu=seq, extend_seq_lens_cpu=ext,
            num_tokens=len(rows), padded_num_tokens=T)
        floor = t([r[2] for r in rows] + [0] * (T - len(rows)))
        return (res.req_pool_indices_repeated.long(), res.seq_lens_casual.long() - 1, floor)

    def build(self, rows, T):
        req, pos, floor = self.expand(rows, T)
        live = self.live_rows(len(rows), T)
        p = self.path
        return real_window_layout(
            req[:live], pos[:live], zero_row=p.window.zero_row, window=p.W,
            capacity=p.window.capacity, floor=floor[:live], num_groups=self.groups(T),
            padded_rows=None if live is None else T)

    def refresh(self, held, fresh):
        """``DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_`` (-> ``copy_``)."""
        P = self.path.P
        core = self.cores.get(id(held))
        if core is None or core.request_window_layout is not held:
            core = self.cores[id(held)] = _core(held, P)
        release_features.backend_mod.DSV4AttnMetadata.refresh_for_breakable_cuda_graph_replay_(
            core, _core(fresh, P))

    def capture(self, T):
        from sglang.srt.model_executor.runner_utils import capture_mode

        with capture_mode.model_capture_mode():
            super().capture(T)

    def segment(self, T, layer):
        """The release's resolver (W) and ``store_cache`` with the bucket's layout, through
        :meth:`features.request_window.sglang.SGLangWindowPath.store` (its history copy in
        ``get_swa_raw_buffer`` -> ``RequestWindow.buffer``)."""
        p = self.path
        lay = self.layouts[T]
        p.window.prepared = None
        p.forward_metadata = release_features.backend_mod.DSV4Metadata(
            core_attn_metadata=_core(lay, p.P), indexer_metadata=None)
        dev = p.device
        fb = ForwardBatch(ForwardMode.EXTEND, 1, torch.zeros(T, dtype=torch.int64, device=dev),
                          torch.ones(1, dtype=torch.int64, device=dev), lay.pos)
        p.store(layer, fb, self.static_rows[layer][:T])
