"""The ``sglang`` target's window verify and DP-padded EXTEND (0.5.23 only): :class:`SGLangDSpark`
replaces :class:`features.request_window.dspark.engine.DSparkPath` on
:class:`features.request_window.sglang.SGLangWindowPath`.

Real (CPU torch branches): a verify's rows from ``expand_extend_with_same_length`` and its
layout from ``window_layout`` with ``num_groups = bs`` (as
``make_forward_metadata_from_raw_verify`` passes them); a DP-padded EXTEND's rows from
``expand_prefill_casually`` (``padded_num_tokens`` the padded count), floors padded by
``_pad_rows``, ``window_layout`` with ``num_groups`` = requests and no ``padded_rows`` (sglang
0.5.23's eager ``init_forward_metadata`` chain). Modelled: ``_install_early_verify_metadata``
(``swa_out_cache_loc`` None under the window) and the MLP-sync padding itself (full location 0,
position 0). Per release: ``sglang_facts.json`` beside this file."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.dspark.engine import DSparkPath
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.sglang import features as release_features
from swafuzz.targets.sglang.real import RealBackend


def _runs(req: torch.Tensor) -> list[tuple[int, int]]:
    """(slot, rows) of each maximal run of equal consecutive slots (one per request here)."""
    out: list[list[int]] = []
    for s in req.tolist():
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return [(a, b) for a, b in out]


class SGLangDSpark(DSparkPath):
    """:class:`features.dspark.engine.DSparkPath` with SGLang 0.5.23's row expansion and layout."""

    def _shim(self):
        sh = self.p.shim
        sh.cuda_int32_kwargs = {"dtype": torch.int32, "device": self.p.device}
        return sh

    def metadata(self, fb, core, req, floor, groups):
        if fb.forward_mode == ForwardMode.TARGET_VERIFY:
            T = self.p.e.gcfg.num_draft_tokens
            slots = req[::T]
            seq = fb.positions[::T]  # each request's length before the step
            casual, rep = RealBackend.expand_extend_with_same_length(
                self._shim(), bs=slots.numel(), qo_len=T, seq_lens=seq + T,
                req_pool_indices=slots)
            lay = self.p.layout(rep.long(), (casual - 1).long(), None, groups)
            core.request_window_layout = lay
            core.swa_out_cache_loc = lay.write_loc
        super().metadata(fb, core, req, floor, groups)

    def pad_layout(self, req, pos, floor, groups, pad):
        """sglang 0.5.23's eager EXTEND layout over the padded rows (module docstring)."""
        n = req.numel() - pad
        runs = _runs(req[:n])
        dev = req.device
        slots = torch.tensor([s for s, _ in runs], dtype=torch.int64, device=dev)
        lens = [k for _, k in runs]
        seq, k = [], 0
        for _, m in runs:
            seq.append(int(pos[k + m - 1]) + 1)
            k += m
        ext = torch.tensor(lens, dtype=torch.int32, device=dev)
        casual, rep = RealBackend.expand_prefill_casually(
            self._shim(), num_tokens=n, seq_lens=seq, extend_seq_lens=lens,
            req_pool_indices=slots, padded_num_tokens=n + pad,
            seq_lens_tensor=torch.tensor(seq, dtype=torch.int32, device=dev),
            extend_seq_lens_tensor=ext, extend_start_loc=torch.cumsum(ext, 0) - ext)
        fl = release_features.backend_mod._pad_rows(floor[:n], num_rows=n + pad)
        return self.p.layout(rep.long(), (casual - 1).long(), fl, groups)
