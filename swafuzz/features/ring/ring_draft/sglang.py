"""The DSpark draft block on a ring on the ``sglang`` target (0.5.23; Case op ``draft_block``).
Imports SGLang.

Real: the block's ring rows are computed by the release's own
``DeepseekV4AttnBackend._dspark_seq_lens_casual`` (``BuildBlockSeqLensCausal`` ->
``build_block_seq_lens_causal``, its torch branch on CPU) and
``DeepseekV4AttnBackend._dspark_swa_ring_out_cache_loc`` (``swa_ring_rows``), called on the
backend's shim with the draft pool's ``swa_req_ring_size``; the stores then go through the
release's ``store_cache`` and resolver (its cached branch returns the stamped rows). Modelled:
the per-request slots (upstream ``req_pool_indices.repeat_interleave(block_size)``) come from
the harness's ring tables, and a graph block runs through the model's TARGET_VERIFY runner on
the draft model (the release's ``decode_cuda_graph_runner`` needs a model runner); the two
release helpers above are recorded in the captured graph and re-run on every replay.
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
