"""The DSpark draft block on a ring on the ``sglang`` target (0.5.23; op ``draft_block``). Imports
SGLang.

Real: the ring rows from the release's ``DeepseekV4AttnBackend._dspark_seq_lens_casual`` (torch
branch on CPU) and ``_dspark_swa_ring_out_cache_loc`` on the backend's shim with the draft pool's
``swa_req_ring_size`` (recorded in the captured graph, re-run per replay); the release's
``store_cache`` and resolver (cached branch). Modelled: per-request slots (upstream
``req_pool_indices.repeat_interleave``) from the harness's ring tables, and a graph block on the
model's TARGET_VERIFY runner (``decode_cuda_graph_runner`` needs a model runner).
"""

from __future__ import annotations

import torch

from swafuzz.features.ring.ring_draft.engine import DraftBlockMixin
from swafuzz.targets import TargetUnavailable
from swafuzz.targets.sglang.real import ADAPTER, VERSION, RealBackend

_MISSING = [n for n in ("_dspark_seq_lens_casual", "_dspark_swa_ring_out_cache_loc")
            if not hasattr(RealBackend, n)]
if _MISSING:  # pragma: no cover - depends on the environment
    raise TargetUnavailable(f"target sglang: sglang {VERSION} (adapter {ADAPTER}) has no DSpark "
                            f"draft block on a ring: DeepseekV4AttnBackend lacks "
                            f"{', '.join(_MISSING)} (first in 0.5.23)")


class SGLangDraftBlockMixin(DraftBlockMixin):
    """:class:`features.ring_draft.engine.DraftBlockMixin` with the release's block-row helpers."""

    def block_rows(self, fb) -> torch.Tensor:
        sh = self.shim
        sh.cuda_int32_kwargs = {"device": fb.seq_lens.device, "dtype": torch.int32}
        casual = RealBackend._dspark_seq_lens_casual(sh, seq_lens=fb.seq_lens,
                                                     block_size=self.gamma)
        rep = self.repeat_slots(self.block_slots(fb))
        return RealBackend._dspark_swa_ring_out_cache_loc(
            sh, seq_lens_casual=casual, req_pool_indices_repeated=rep)
