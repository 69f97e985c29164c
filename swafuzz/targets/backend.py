"""The DSV4 attention backend's SWA write path, unified design of PR #27091 (spec §4.3-§4.6, §4.8).

:class:`DSV4Backend` (one per model pool and role):

* ``init_forward_metadata(fb)`` (§4.3, eager): with MTP (``topk > 0``) and a logically IDLE
  batch returns early (``forward_metadata`` stays the previous forward's); else builds metadata
  and runs the in-graph init;
* ``init_forward_metadata_out_graph(fb, in_capture)`` (§4.4): host prep per bucket before capture
  and each replay: synthetic capture locations, IDLE substitution, 0-padding to the bucket,
  ``replay_cuda_graph_metadata_from`` (first: kept as persistent; later ``persistent.copy_(temp)``);
* ``init_forward_metadata_in_graph(fb)`` (§4.3): upgrades Raw metadata, selects the multi-step
  draft's slice, sets ``core.swa_out_cache_loc = int32(M[loc])`` via the impl's ``translate``;
* resolver ``get_swa_out_cache_loc(fb)`` (§4.5); ``store_cache(layer_id, rows, fb)`` (§4.6).

Each decision point is its own method so a mutant overrides exactly one.
:class:`MultiStepBackend` (§4.8) holds one backend per speculative step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from swafuzz import features
from swafuzz.targets.forward_mode import (
    ForwardBatch,
    ForwardMode,
    GraphBucket,
    logical_forward_mode,
)
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import AttnMetadata, CoreAttnMetadata, RawDecodeMetadata


@dataclass
class StoreRecord:
    """One store call: local layer index, the loc tensor handed to the kernel (kept by
    reference: under a graph its values are read after the replay), K rows stored."""

    layer: int
    loc: torch.Tensor
    rows: int


def per_step_draft_out_cache_loc(loc: torch.Tensor, bs: int, topk: int, steps: int) -> torch.Tensor:
    """``[steps, bs*topk]``: row s holds ``loc[b, k, s]`` for b, k (b-major); ``loc`` is int64
    ``[bs*topk*steps]`` laid out ``[bs, topk, steps]`` (spec §4.8)."""
    assert loc.dim() == 1 and loc.numel() == bs * topk * steps, (
        f"per_step_draft_out_cache_loc: loc must be 1-D of bs*topk*steps = {bs * topk * steps} "
        f"entries (got shape {tuple(loc.shape)})")
    return loc.view(bs, topk, steps).permute(2, 0, 1).reshape(steps, bs * topk).contiguous()


def pad_loc(loc: torch.Tensor, n: int, what: str) -> torch.Tensor:
    """A new int tensor: ``loc`` followed by zeros up to ``n`` entries. Refuses ``len(loc) > n``
    (a negative functional pad would silently truncate, spec §9.11)."""
    assert loc.dim() == 1, f"{what}: out_cache_loc must be 1-D (got shape {tuple(loc.shape)})"
    assert loc.numel() <= n, (f"{what}: {loc.numel()} live locations do not fit the bucket's "
                              f"{n} rows")
    return F.pad(loc, (0, n - loc.numel()), value=0)


class DSV4Backend:
    """SWA write path of one attention backend over ``pool`` (holds ``M`` and the kernel impl).
    ``topk``: speculative top-k (0: no MTP); serves step ``step_id`` of ``num_steps`` (1: no
    per-step slicing); ``decode_tokens_per_bs`` / ``draft_extend_tokens_per_bs``: rows per request
    of those buckets (multi-step draft: ``topk*num_steps``); ``prep_in_graph``: Raw metadata
    (``SGLANG_PREP_IN_CUDA_GRAPH``); ``swa_loc_buffer_rows > 0``: the draft-extend int32 SWA
    location buffer (PR #34890, spec §4.7), refilled by the out-graph prep."""

    def __init__(self, pool: SWAKVPool, *, topk: int = 0, num_steps: int = 1, step_id: int = 0,
                 decode_tokens_per_bs: int = 1, draft_extend_tokens_per_bs: int = 1,
                 prep_in_graph: bool = False, swa_loc_buffer_rows: int = 0):
        self.pool = pool
        self.swa_loc_buffer = (torch.zeros(swa_loc_buffer_rows, dtype=torch.int32,
                                           device=pool.device) if swa_loc_buffer_rows else None)
        self.page_size = pool.page_size
        self.topk = topk
        self.num_steps = num_steps
        self.step_id = step_id
        self.decode_tokens_per_bs = decode_tokens_per_bs
        self.draft_extend_tokens_per_bs = draft_extend_tokens_per_bs
        self.prep_in_graph = prep_in_graph
        self.forward_metadata: AttnMetadata | RawDecodeMetadata | object | None = None
        self.graph_metadata: dict[tuple, AttnMetadata | RawDecodeMetadata] = {}
        self.store_log: list[StoreRecord] = []
        self.baked: dict[str, list[int]] = {}  # host values baked at capture (buggy variants)
        #: the allocator's store-row tables, set by the engine when the Case's allocator keeps
        #: them (hook ``engine.uses_allocator``): stores then write the rows they give, never
        #: ``M``'s translation; None for a paged pool
        self.row_tables = None

    # -- translation ----------------------------------------------------------------------------
    def translate(self, loc: torch.Tensor) -> torch.Tensor:
        """int32 ``[N]`` = ``int32(M[loc])`` via the pool (kernel ``translate``)."""
        return self.pool.translate_loc_from_full_to_swa(loc).to(torch.int32)

    def translate_in_graph(self, loc: torch.Tensor) -> torch.Tensor:
        """The in-graph translation of §4.3 (recorded at capture, re-run on every replay)."""
        return self.translate(loc)

    # -- metadata construction --------------------------------------------------------------
    def build_metadata(self, loc: torch.Tensor | None, seq_lens: torch.Tensor,
                       positions: torch.Tensor) -> AttnMetadata | RawDecodeMetadata:
        if self.prep_in_graph:
            return RawDecodeMetadata(seq_lens=seq_lens, out_cache_loc=loc, positions=positions)
        core = CoreAttnMetadata(page_size=self.page_size, raw_out_loc=loc, seq_lens=seq_lens,
                                positions=positions)
        return AttnMetadata(core_attn_metadata=core)

    def upgrade_raw(self, raw: RawDecodeMetadata) -> AttnMetadata:
        """In-graph materialisation of Raw metadata (device ops, recorded at capture)."""
        loc = raw.out_cache_loc.clone() if raw.out_cache_loc is not None else None
        core = CoreAttnMetadata(page_size=self.page_size, raw_out_loc=loc,
                                seq_lens=raw.seq_lens.clone(), positions=raw.positions.clone())
        return AttnMetadata(core_attn_metadata=core)

    # -- eager ----------------------------------------------------------------------------------
    def skip_eager_init(self, fb: ForwardBatch) -> bool:
        """MTP enabled and logically IDLE: eager init returns early (spec §4.3)."""
        return self.topk > 0 and logical_forward_mode(fb).is_idle()

    def init_forward_metadata(self, fb: ForwardBatch) -> None:
        """Eager init (spec §4.3)."""
        if self.skip_eager_init(fb):
            return
        self.forward_metadata = self.build_metadata(fb.out_cache_loc, fb.seq_lens, fb.positions)
        self.init_forward_metadata_in_graph(fb)

    # -- in graph -------------------------------------------------------------------------------
    def select_step_loc(self, fb: ForwardBatch, loc: torch.Tensor) -> torch.Tensor:
        """Multi-step draft decode: this backend's step slice of the whole ``bs*topk*steps``
        buffer (spec §4.3 (2)); otherwise ``loc`` itself."""
        if fb.forward_mode.is_decode_or_idle() and self.topk > 0 and self.num_steps > 1:
            steps = per_step_draft_out_cache_loc(loc, fb.batch_size, self.topk, self.num_steps)
            return steps[self.step_id]
        return loc

    def init_forward_metadata_in_graph(self, fb: ForwardBatch) -> None:
        """Spec §4.3: upgrade Raw metadata; stamp ``swa_out_cache_loc`` from the live loc."""
        md = self.forward_metadata
        if isinstance(md, RawDecodeMetadata):
            md = self.forward_metadata = self.upgrade_raw(md)
        if isinstance(md, AttnMetadata) and fb.out_cache_loc is not None:
            loc = self.select_step_loc(fb, fb.out_cache_loc)
            md.core_attn_metadata.swa_out_cache_loc = (
                self.table_rows(loc, fb) if self.row_tables is not None
                else self.translate_in_graph(loc))

    # -- rows from the allocator's tables (slots EnginePart.store_rows / store_skip) ----------
    def table_rows(self, loc: torch.Tensor, fb: ForwardBatch) -> torch.Tensor:
        """int32 rows of ``loc`` at ``fb.positions`` from :attr:`row_tables` (``-1``: a row
        the store skips)."""
        return features.slot("engine", "store_rows")(self.row_tables, loc, fb.positions)

    def table_rows_fallback(self, fb: ForwardBatch) -> torch.Tensor:
        """A resolver miss with row tables: the table rows of the live batch (never ``M``,
        which such an allocator never writes; addendum §3 F, class A4)."""
        return self.table_rows(fb.out_cache_loc, fb)

    def store_skip_guard(self, loc: torch.Tensor) -> torch.Tensor:
        """The store's ``out_loc < 0`` skip with row tables (addendum §2.1, class A11)."""
        return features.slot("engine", "store_skip")(loc)

    # -- out graph ------------------------------------------------------------------------------
    def synthetic_capture_loc(self, bucket: GraphBucket, fb: ForwardBatch) -> torch.Tensor | None:
        """Capture-time locations (spec §4.4): zeros like seq_lens / int32 zeros per position /
        none for draft-extend."""
        if bucket is GraphBucket.DECODE_OR_IDLE:
            return torch.zeros_like(fb.seq_lens)
        if bucket is GraphBucket.TARGET_VERIFY:
            return torch.zeros(fb.positions.numel(), dtype=torch.int32, device=fb.positions.device)
        return None

    def out_graph_decode(self, fb: ForwardBatch, bs: int, loc: torch.Tensor,
                         seq_lens: torch.Tensor):
        rows = bs * self.decode_tokens_per_bs
        return self.build_metadata(pad_loc(loc, rows, "out_graph decode"), seq_lens, fb.positions)

    def out_graph_verify(self, fb: ForwardBatch, bs: int, loc: torch.Tensor,
                         seq_lens: torch.Tensor):
        rows = fb.positions.numel()
        return self.build_metadata(pad_loc(loc, rows, "out_graph verify"), seq_lens, fb.positions)

    def out_graph_draft_extend(self, fb: ForwardBatch, bs: int, loc: torch.Tensor | None,
                               seq_lens: torch.Tensor):
        """DRAFT_EXTEND bucket: raw locations only (capture: zeros; replay: padded with 0); no
        stamp (the #27091 review fix) unless the buffer refill applies: the store translates live."""
        rows = bs * self.draft_extend_tokens_per_bs
        if loc is None:
            loc = seq_lens.new_zeros(rows)
        md = self.build_metadata(pad_loc(loc, rows, "out_graph draft_extend"), seq_lens,
                                 fb.positions)
        if self.swa_loc_buffer is not None and isinstance(md, AttnMetadata):
            md.core_attn_metadata.swa_out_cache_loc = self.refill_swa_loc_buffer(loc)
        return md

    def refill_swa_loc_buffer(self, loc: torch.Tensor) -> torch.Tensor | None:
        """PR #34890 (spec §4.7): ``buf[n:] = 0``, ``buf[:n] = int32(M[loc])`` outside the graph;
        returns ``buf[:n]`` (None if too small: the store then translates live)."""
        buf, n = self.swa_loc_buffer, loc.numel()
        if n > buf.numel():
            return None
        buf[n:] = 0
        buf[:n] = self.translate(loc)
        return buf[:n]

    def build_out_graph_metadata(self, fb: ForwardBatch, in_capture: bool = False):
        """Spec §4.4 up to (not including) ``replay_cuda_graph_metadata_from``: (key, temp)."""
        bucket = GraphBucket.of(fb.forward_mode)
        bs = fb.batch_size
        if in_capture:
            loc = self.synthetic_capture_loc(bucket, fb)
            actual = fb.forward_mode
        else:
            loc = fb.out_cache_loc
            actual = fb.actual_forward_mode or fb.forward_mode
        seq_lens = fb.seq_lens
        if actual.is_idle():
            dev = fb.seq_lens.device
            seq_lens = torch.ones(bs, dtype=torch.int64, device=dev)
            loc = torch.zeros(bs, dtype=torch.int64, device=dev)
        if bucket is GraphBucket.DECODE_OR_IDLE:
            temp = self.out_graph_decode(fb, bs, loc, seq_lens)
        elif bucket is GraphBucket.TARGET_VERIFY:
            temp = self.out_graph_verify(fb, bs, loc, seq_lens)
        else:
            temp = self.out_graph_draft_extend(fb, bs, loc, seq_lens)
        return (bucket, bs), temp

    def init_forward_metadata_out_graph(self, fb: ForwardBatch, in_capture: bool = False) -> None:
        key, temp = self.build_out_graph_metadata(fb, in_capture)
        self.forward_metadata = self.replay_cuda_graph_metadata_from(key, temp)

    def replay_cuda_graph_metadata_from(self, key: tuple, temp):
        """First time for ``key``: ``temp`` becomes the bucket's persistent metadata; later:
        the persistent object is refreshed from ``temp`` and returned."""
        persistent = self.graph_metadata.get(key)
        if persistent is None:
            self.graph_metadata[key] = temp
            return temp
        self.copy_graph_metadata(persistent, temp)
        return persistent

    def copy_graph_metadata(self, persistent, temp) -> None:
        """``persistent.copy_(temp)``: copy fields in place, ``swa_out_cache_loc`` assigned."""
        if isinstance(persistent, RawDecodeMetadata):
            persistent.copy_(temp)
        else:
            persistent.core_attn_metadata.copy_(temp.core_attn_metadata)

    # -- what the preparation built (ForwardObs.prepared) ----------------------------------------
    def prepared(self) -> dict[str, list[int]]:
        """The last preparation's metadata as lists (host values, outside capture): ``out_loc``
        (full locations it was built from), ``seq_lens``, ``positions`` (graph: the static
        buffers), ``swa_loc`` (the stamp, absent while None), ``loc_buffer`` (the whole SWA
        location buffer when the stamp is a view of it, PR #34890)."""
        md = self.forward_metadata
        out: dict[str, list[int]] = {}
        if isinstance(md, RawDecodeMetadata):
            loc = md.out_cache_loc
            if loc is not None:
                out["out_loc"] = loc.tolist()
            out["seq_lens"], out["positions"] = md.seq_lens.tolist(), md.positions.tolist()
        elif isinstance(md, AttnMetadata):
            core = md.core_attn_metadata
            if core.raw_out_loc is not None:
                out["out_loc"] = core.raw_out_loc.tolist()
            out["seq_lens"], out["positions"] = core.seq_lens.tolist(), core.positions.tolist()
            stamp = core.swa_out_cache_loc
            if stamp is not None:
                out["swa_loc"] = stamp.tolist()
                buf = self.swa_loc_buffer
                if buf is not None and stamp.untyped_storage().data_ptr() == \
                        buf.untyped_storage().data_ptr():  # the stamp is the buffer's front
                    out["loc_buffer"] = buf.tolist()
        return out

    # -- resolver and store ---------------------------------------------------------------------
    def cache_usable(self, cached: torch.Tensor | None, fb: ForwardBatch, n: int) -> bool:
        """Spec §4.5: cached, not IDLE (current mode), first-dim length equals the live loc's."""
        return cached is not None and fb.forward_mode != ForwardMode.IDLE and cached.shape[0] == n

    def get_swa_out_cache_loc(self, fb: ForwardBatch) -> torch.Tensor:
        """Spec §4.5: the cached int32 tensor (same object) or a fresh ``int32(M[live loc])``."""
        n = fb.out_cache_loc.shape[0]
        core = getattr(self.forward_metadata, "core_attn_metadata", None)
        cached = core.swa_out_cache_loc if core is not None else None
        if self.cache_usable(cached, fb, n):
            return cached
        if self.row_tables is not None:
            return self.table_rows_fallback(fb)
        return self.translate(fb.out_cache_loc)

    def get_store_loc(self, layer_id: int, fb: ForwardBatch) -> torch.Tensor:
        """The SWA write locations of layer ``layer_id`` (unified: the resolver, every layer)."""
        return self.get_swa_out_cache_loc(fb)

    def _store(self, cache: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        """The store kernel call (contract-checked ``impl.store``); with row tables ``-1`` rows
        are skipped first (:meth:`store_skip_guard`)."""
        if self.row_tables is not None:
            loc = self.store_skip_guard(loc)
        self.pool.impl.store(cache, loc, rows)

    def store_cache(self, layer_id: int, swa_k: torch.Tensor, fb: ForwardBatch) -> None:
        """Write ``swa_k`` (``[N, row_width]``) of global layer ``layer_id`` at the resolved
        locations; the call is logged in ``store_log`` (loc by reference)."""
        loc = self.get_store_loc(layer_id, fb)
        self.store_log.append(StoreRecord(layer_id - self.pool.start_layer, loc, swa_k.shape[0]))
        self._store(self.pool.layer_cache(layer_id), loc, swa_k)


class MultiStepBackend:
    """``DeepseekV4MultiStepBackend`` (spec §4.8): one inner backend per speculative step."""

    def __init__(self, backends: list[DSV4Backend]):
        self.backends = backends
        self.num_steps = len(backends)

    def init_forward_metadata(self, fb: ForwardBatch) -> None:
        """Eager: steps 0..n-2 (the last step writes nothing)."""
        for b in self.backends[:-1]:
            b.init_forward_metadata(fb)

    def init_forward_metadata_in_graph(self, fb: ForwardBatch) -> None:
        for b in self.backends:
            b.init_forward_metadata_in_graph(fb)

    def init_forward_metadata_out_graph(self, fb: ForwardBatch, in_capture: bool = False) -> None:
        view = fb.view(forward_mode=ForwardMode.DECODE,
                       actual_forward_mode=fb.actual_forward_mode or fb.forward_mode)
        if in_capture:
            for b in self.backends:
                b.init_forward_metadata_out_graph(view, in_capture=True)
            return
        if self.num_steps == 1:
            return
        key, temp = self.backends[0].build_out_graph_metadata(view)
        for b in self.backends[:-1]:
            b.forward_metadata = b.replay_cuda_graph_metadata_from(key, temp)
