"""The ``sglang`` target's prefix hits under a late-layer tail, fold and separate encoder replay
and compressor locations (0.5.23 only): SGLang's code in place of
:mod:`features.request_window.tail_prefix.engine`'s, on top of
:class:`features.request_window.sglang.SGLangWindowPath`.

Real: ``UnifiedRadixCache.swa_reprefill_tail_tokens`` through ``_req_radix_key`` (a cache built
without ``__init__``), ``encoder_swa_replay``'s ``_reset_windows_and_collect_hits``,
``_fold_batch`` and ``_build_replay_batch`` on a ScheduleBatch stand-in and a ``req_to_token``
table of the allocator's tokens, ``_compressor_out_loc`` and (where Triton runs here)
``init_compression_metadata``'s c4 output. Modelled: the radix tree's page-aligned match,
``replay_len``'s constant 128 (scaled to the Case's window), the replay forward's per-run floor
and which source compressors run. Per release: ``sglang_facts.json`` beside this file."""

from __future__ import annotations

import os
from types import SimpleNamespace as NS

import torch

from swafuzz.features.request_window.sglang import (
    SGLangWindowPath,  # TargetUnavailable before 0.5.21
)
from swafuzz.targets.forward_mode import ForwardMode

# isort: split
from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend as _Backend
from sglang.srt.mem_cache import common as _common
from sglang.srt.mem_cache import unified_radix_cache as _urc
from sglang.srt.model_executor import encoder_swa_replay as _esr

# ``replay_len`` (the release's constant 128) scaled to the running Case's window, as the
# window module scales ``window_layout``'s history length; the body is the release's rule
_real_replay_len = _esr.replay_len
_REPLAY = {"window": 128}


def _scaled_replay_len(prefix_len: int) -> int:
    return min(_real_replay_len(prefix_len), prefix_len, _REPLAY["window"])


_esr.replay_len = _scaled_replay_len


def _triton_runs(t: torch.Tensor) -> bool:
    return t.device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"


class SGLangTailPrefixPath(SGLangWindowPath):
    """:class:`SGLangWindowPath` with the release's radix cap, fold, separate replay batch and
    compressor locations (module docstring)."""

    # -- T5 -------------------------------------------------------------------------------------
    def radix_cache(self):
        tree = object.__new__(_urc.UnifiedRadixCache)
        tree.components = {_urc.ComponentType.SWA: NS(sliding_window_size=self.W)}
        tree.decoder_swa_bounded_replay = bool(self.L)
        tree.session = NS(will_lend_record=lambda req: False)
        return tree

    def prefix_hit(self, n: int, length: int) -> int:
        req = NS(extra_key=None, cache_salt=None)
        key = _common._req_radix_key(self.radix_cache(), req, list(range(length)))
        return min(n, len(key) // self.P * self.P)  # the tree matches whole pages (modelled)

    # -- E1 -------------------------------------------------------------------------------------
    @staticmethod
    def compressor_loc(loc, keep):
        return _Backend._compressor_out_loc(NS(out_cache_loc=loc, encoder_swa_compress_rows=keep))

    @staticmethod
    def c4_loc(raw, positions):
        if not _triton_runs(raw):
            return SGLangWindowPath.c4_loc(raw, positions)
        from sglang.kernels.ops.attention.dsv4.metadata_kernel import init_compression_metadata

        pos = positions.to(torch.int32)
        out = init_compression_metadata(pos + 1, pos, raw, None, 0, compute_page_indices=False)
        return out[0]

    # -- fold / separate: the release's batch functions on a ScheduleBatch stand-in -------------
    def _stand_in(self, per):
        al = self.e.allocator
        dev = self.device
        width = max(len(al.tokens[rid]) for rid, _, _ in per)
        table = torch.zeros(self.cfg.window_slots + 1, max(width, 1), dtype=torch.int32,
                            device=dev)
        reqs, slots, pre, ext, ids, locs, reset = [], [], [], [], [], [], []
        for rid, r, new in per:
            toks = al.tokens[rid]
            sl = self.slot[rid]
            table[sl, :len(toks)] = torch.tensor(toks, dtype=torch.int32, device=dev)
            pq = len(toks) - len(new)
            reqs.append(NS(full_untruncated_fill_ids=list(range(len(toks)))))
            slots.append(sl)
            pre.append(pq)
            ext.append(len(new))
            ids += range(pq, len(toks))
            locs += new
            reset.append(bool(r))
        idx = torch.tensor(slots, dtype=torch.int64)
        batch = NS(reqs=reqs, input_ids=torch.tensor(ids, dtype=torch.int64, device=dev),
                   out_cache_loc=torch.tensor(locs, dtype=torch.int64, device=dev),
                   prefix_lens=pre, extend_lens=ext, req_pool_indices=idx.to(dev),
                   req_pool_indices_cpu=idx, prefill_input_ids_cpu=None,
                   extend_logprob_start_lens=None, engram_history=None,
                   engram_staged_rows=None, encoder_swa_reset=reset, global_num_tokens=None)
        runner = NS(device=dev, req_to_token_pool=NS(req_to_token=table),
                    model=NS(model=NS(engram_hasher=None)))
        return batch, runner

    def _hits(self, batch):
        _REPLAY["window"] = self.W
        return _esr._reset_windows_and_collect_hits(batch=batch, window=self.window)

    def fold(self, i, per):
        if not self.on or not any(r for _, r, _ in per):
            return super().fold(i, per)
        batch, runner = self._stand_in(per)
        folded = _esr._fold_batch(batch=batch, runner=runner, rows=self._hits(batch))
        fb = folded.batch
        rows, replay = [], []
        floor = folded.row_floor.tolist()
        k = 0
        for b, (rid, _r, _new) in enumerate(per):
            for p in range(fb.prefix_lens[b], fb.prefix_lens[b] + fb.extend_lens[b]):
                rows.append((self.slot[rid], p, floor[k]))
                k += 1
        replay = (folded.scheduled_row < 0).tolist()
        g = self.prefill_step(i, rows)  # an extend with exec "graph": the prefill graph
        if g is not None:
            return [g]
        return [self.forward(i, ForwardMode.EXTEND, rows, fb.out_cache_loc.tolist(), len(per),
                             list(fb.extend_lens), replay=replay)]

    def separate(self, i, per, reset=True):
        batch, runner = self._stand_in(per)
        hits = self._hits(batch)  # resets the hit slots (the release's reset)
        rep = _esr._build_replay_batch(batch=batch, runner=runner, rows=hits)
        rows = []
        for b, k in enumerate(i_ for i_, _, _ in hits):
            rid = per[k][0]
            start = rep.prefix_lens[b]
            rows += [(self.slot[rid], p, start) for p in range(start, int(rep.seq_lens_cpu[b]))]
        out = [self.forward(i, ForwardMode.EXTEND, rows, rep.out_cache_loc.tolist(), len(hits),
                            list(rep.extend_lens), fwd=0, replay=None, low_ratio=False)]
        return out + [self.scheduled_forward(i, per)]
