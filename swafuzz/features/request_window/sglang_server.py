"""The request window at server level (imports SGLang): the hop the server-level pipeline
(:mod:`swafuzz.targets.sglang.pipeline.steps`, hook ``sglang.server_window``) runs per forward
of a Case with ``enable_encoder_swa_bounded_replay``. Per EXTEND, before
``ForwardBatch.init_new``: the release's ``fold_encoder_swa_replay`` (``run_encoder_swa_replay``
without the fold) over a worker stand-in holding the real ``RequestWindow``, resetting the slot
of every request that starts its window (a cached prefix that would fold rows is not driven:
the radix cache is off). Per forward, after ``init_new`` and the MLP-sync padding: the rows
through :class:`features.request_window.sglang.SGLangWindowPath` (slots the release's
``req_pool_indices``; an eager EXTEND laid out as the release's eager metadata chain does, a
DECODE one group per row with padding in slot 0; the tail's late layers on
``late_layer_tail_layout``'s rows), the release's resolver, ``store_cache`` and
``RequestWindow.commit``, then the ring's tags and bytes. Real and modelled: :mod:`.server_hops`."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from swafuzz.features.request_window import sglang as seam
from swafuzz.features.request_window.sglang import SGLangWindowPath
from swafuzz.targets.forward_mode import ForwardMode
from swafuzz.targets.sglang import features as release_features
from swafuzz.targets.sglang.environ import set_attr

from sglang.srt.mem_cache import dsv41_request_window as rw  # noqa: E402  # isort: skip
from sglang.srt.mem_cache.memory_pool import ReqToTokenPool  # noqa: E402  # isort: skip
from sglang.srt.model_executor import encoder_swa_replay as esr  # noqa: E402  # isort: skip

_FOLD = release_features.FOLD


class _EngineView:
    """The server's component engine as the window path sees it: its pool config with the
    request window set (everything else is the engine's)."""

    def __init__(self, engine, cfg):
        self._engine, self.cfg = engine, cfg
        self.case = dataclasses.replace(engine.case, pool=cfg, steps=())

    def __getattr__(self, name):
        return getattr(self._engine, name)


def window_config(pipeline):
    """The pool config of the window path: ring capacity the sliding window (the release's
    ``capacity = sliding_window`` without MTP), one slot per request slot the release's
    ReqToTokenPool hands out (1..size), a workspace chunk that holds any forward's rows."""
    case = pipeline.case
    eng = pipeline.srv.engine
    slots = pipeline.srv.req_to_token_pool.size + 1
    most = sum(r.prompt_len + r.max_new_tokens for r in case.requests) + 2 * slots
    return dataclasses.replace(eng.cfg, request_window=case.model.sliding_window,
                               window_slots=slots, window_chunk=most,
                               late_layer_start=case.model.late_layer_start)


class ServerWindow:
    """The request-window hop of one server-level run (module docstring)."""

    def __init__(self, pipeline):
        self.p = pipeline
        self.path = SGLangWindowPath(_EngineView(pipeline.srv.engine, window_config(pipeline)))
        runner = SimpleNamespace(
            token_to_kv_pool=SimpleNamespace(request_window=self.path.window),
            req_to_token_pool=pipeline.srv.req_to_token_pool, device=self.path.device,
            attn_backend=SimpleNamespace(folds_encoder_swa_replay=_FOLD))
        self.worker = SimpleNamespace(model_runner=runner)

    def before_forward(self, batch) -> None:
        """The worker's encoder-replay step before ``ForwardBatch.init_new`` (the release's
        own function; module docstring)."""
        if not batch.forward_mode.is_extend():
            return
        hits = [p for p, reset in zip(batch.prefix_lens, batch.encoder_swa_reset or ()) if
                reset and p]
        if hits:  # a chunk's continuation keeps its slot (no reset): only a cached prefix hits
            raise RuntimeError(f"an EXTEND whose new windows start on cached prefixes {hits}: "
                               "the encoder-replay fold of prefix hits is not driven at server "
                               "level")
        if _FOLD:
            if esr.fold_encoder_swa_replay(self.worker, batch) is not None:
                raise RuntimeError("fold_encoder_swa_replay folded rows without a prefix hit")
        else:
            esr.run_encoder_swa_replay(self.worker, batch)

    def forward(self, index: int, mode: str, slots: list[int], per_req: list[int],
                loc: list[int], pos: list[int]) -> dict:
        """One forward's rows through the window path: ``slots`` / ``per_req`` the release's
        request slots and rows per request (batch order), ``loc`` / ``pos`` the batch's full
        locations and positions after the padding (padding rows last). Returns the stores
        (per layer, the workspace rows handed to the store), the history tags each layer read
        and the ring after the forward."""
        rows = [(s, 0, 0) for s, n in zip(slots, per_req) for _ in range(n)]
        n = len(rows)
        rows = [(s, int(p), f) for (s, _, f), p in zip(rows, pos)]
        pad = len(loc) - n
        ds = self.path.dspark()
        if mode == "EXTEND":
            rows += [(0, int(p), 0) for p in pos[n:]]
            groups, fmode = len(slots), ForwardMode.EXTEND
            ds.pad = pad  # the eager EXTEND's padded layout (SGLangDSpark.pad_layout)
        else:
            rows += [(0, 0, 0)] * pad
            groups, fmode = len(rows), ForwardMode.DECODE
        try:
            tail = list(per_req) if fmode == ForwardMode.EXTEND and self.path.L else None
            o = self.path.forward(index, fmode, rows, [int(x) for x in loc], groups, tail)
        finally:
            ds.pad = 0
        st = self.path.step_obs(index)
        w = self.path.window
        return {"stores": [s.locs for s in o.stores], "groups": groups, "slots": list(slots),
                "history_tags": o.history_tags, "ring_tags": st.tags, "bytes_after": st.ring,
                "zero_row": int(w.zero_row), "capacity": int(w.capacity),
                "rows": len(rows)}


# -- server mutants (:mod:`.server_mutants` names and sources them) ------------------------------
def _swapped(owner, name: str, make):
    """``owner.name`` replaced by ``make(real)`` while the context runs."""
    return set_attr(owner, name, make(getattr(owner, name)))


def slot_reset_next():
    """``RequestWindow.reset`` clears the next slot's rows instead of the slot's."""
    return _swapped(rw.RequestWindow, "reset",
                    lambda real: lambda self, slots: real(self, slots + 1))


def layout_floor_own_row():
    """``window_layout`` called with every row's floor at its own position (no history)."""
    def make(real):
        return lambda req, pos, **kw: real(req, pos, **{**kw, "floor": pos.clone()})

    return _swapped(seam, "real_window_layout", make)


def tail_floor_short():
    """``late_layer_tail_layout``'s floor ``seq_len - tail_lens`` (0.5.21 / 0.5.22's) instead
    of ``max(0, seq_len - W)``."""
    def make(real):
        def late_layer_tail_layout(*, extend_lens_cpu, seq_lens_cpu, tail_len, device, **kw):
            idx, lens, floor = real(extend_lens_cpu=extend_lens_cpu, seq_lens_cpu=seq_lens_cpu,
                                    tail_len=tail_len, device=device, **kw)
            short = [s - t for s, t in zip(seq_lens_cpu, lens) for _ in range(t)]
            return idx, lens, floor.new_tensor(short)
        return late_layer_tail_layout

    return _swapped(release_features.tail_mod, "late_layer_tail_layout", make)


def padding_slot_handed_out():
    """``ReqToTokenPool``'s free list holds its padding row 0 (last, so it is handed out
    first): a request gets the slot padded batches default to."""
    def make(real):
        def __init__(self, *args, **kw):
            real(self, *args, **kw)
            self.free_slots.append(0)
        return __init__

    return _swapped(ReqToTokenPool, "__init__", make)
