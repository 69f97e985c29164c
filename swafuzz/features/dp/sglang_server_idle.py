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

from swafuzz.targets.sglang.pipeline import dispatch  # isort: skip
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
