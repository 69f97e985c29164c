"""An attention-DP rank's IDLE forward at server level (issue 26 item 2; imports SGLang through
the rank's pipeline).

When a peer rank forwards and this rank has no batch, the release's scheduler runs the idle batch
its ``get_idle_batch`` builds (``ScheduleBatch.init_new`` with no requests,
``prepare_for_idle``) through the MLP sync (on the DPSync ranks: padded to the peers' largest
count under MAX_LEN, none under SUM_LEN, a dummy one-request EXTEND under MAX_LEN with an
extending peer) and its model runner: ``ModelRunner.forward`` -> ``EagerRunner._execute_idle``
(padded: ``load_batch`` and metadata init; unpadded: the backend's ``forward_metadata``
dropped) or ``_execute_extend`` for the dummy EXTEND (:mod:`swafuzz.targets.sglang.pipeline.
dispatch`). The record (``ServerObs.idles``): step, the dispatch record (entry, mode, batch size,
``metadata_of``: ``"idle <step>"`` where the metadata was built for it), rows and per layer the
SWA locations the stub model's stores received.
"""

from __future__ import annotations

from sglang.srt.managers.schedule_batch import ScheduleBatch  # isort: skip

from swafuzz.targets.sglang.pipeline import dispatch, seams  # isort: skip
from swafuzz.targets.sglang.pipeline.steps import layer_stores  # isort: skip


def idle_batch(pipe):
    """The rank's ForwardBatch for the release's idle batch (``get_idle_batch``'s recipe)."""
    s = pipe.srv
    sb = ScheduleBatch.init_new([], s.req_to_token_pool, s.allocator, s.tree_cache,
                                s.model_runner.model_config, False, pipe.spec_algorithm)
    sb.prepare_for_idle()
    return pipe.forward_batch(sb)


def run_idle(pipe, t: int, fb, padded: dict) -> None:
    """The rank's idle forward at step ``t`` (``fb``: :func:`idle_batch`; ``padded``: the
    DPSync rank's padded batch) through the release's model runner; recorded in
    ``pipe.obs.idles``."""
    marker = f"idle {t}"
    fo, _graph, rec = pipe.dispatch.forward(t, dispatch.padded(fb, padded), 0, marker=marker)
    stores = layer_stores(fo, pipe.srv.engine.target_pool.num_layers)
    pipe.obs.idles.append({"step": t, **rec, "rows": len(padded["out_cache_loc"]),
                           "stores": stores})


def _patched_idle(wrap):
    """``EagerRunner._execute_idle`` replaced by ``wrap(real)`` while the context is open."""
    runner = dispatch.EagerRunner
    return seams.set_attr(runner, "_execute_idle", wrap(runner._execute_idle))


def idle_keeps_stale_metadata():
    """Server mutant ``server_idle_keeps_metadata``: ``_execute_idle`` without its unpadded
    branch (``attn_backend.forward_metadata = None``; the release's comment: an unpadded idle
    must drop stale metadata, an SWA use-after-free on req_pool otherwise; 0.5.12's
    ``ModelRunner.forward_idle`` has no such branch): the previous forward's metadata stays."""
    def wrap(real):
        def _execute_idle(self, forward_batch, pp_proxy_tensors=None):
            backend = self.model_runner.attn_backend
            held = backend.forward_metadata
            out = real(self, forward_batch, pp_proxy_tensors)
            if forward_batch.batch_size == 0:
                backend.forward_metadata = held
            return out
        return _execute_idle
    return _patched_idle(wrap)


def padded_idle_skips_metadata_init():
    """Server mutant ``server_idle_padded_no_init``: PR #15227 reverted - ``_execute_idle`` of a
    padded IDLE (batch size > 0 after the MLP sync) runs the model without
    ``init_forward_metadata``, on the previous batch's metadata."""
    def wrap(real):
        def _execute_idle(self, forward_batch, pp_proxy_tensors=None):
            backend = self.model_runner.attn_backend
            if forward_batch.batch_size == 0:
                return real(self, forward_batch, pp_proxy_tensors)
            init = backend.init_forward_metadata
            backend.init_forward_metadata = lambda fb: None
            try:
                return real(self, forward_batch, pp_proxy_tensors)
            finally:
                backend.init_forward_metadata = init
        return _execute_idle
    return _patched_idle(wrap)
