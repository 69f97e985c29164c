"""Server-level mutants: changes in the release's own pipeline code, patched at runtime while a
server-level Case runs (imports SGLang). Component-level Cases never run these hops (the
component engine builds no ScheduleBatch), so only server-level Cases can kill them.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Iterator

from sglang.srt.managers.schedule_batch import ScheduleBatch

from swafuzz import features as registry
from swafuzz.targets.sglang.pipeline import graph

try:  # the release's speculative-decoding v2 code (0.5.22, 0.5.23)
    from swafuzz.targets.sglang.pipeline.spec_mutants import PATCHES as SPEC_PATCHES
except ImportError:  # pragma: no cover - depends on the release (0.5.12 has none)
    SPEC_PATCHES = {}


@contextlib.contextmanager
def decode_stale_out_cache_loc() -> Iterator[None]:
    """Spec §9.3 (equal-length stale cache): ``ScheduleBatch.prepare_for_decode`` allocates
    the step's slots but the batch keeps the previous forward's ``out_cache_loc`` when it has
    as many rows, so the stores write into the previous batch's slots."""
    real = ScheduleBatch.prepare_for_decode

    def prepare_for_decode(self):
        old = self.out_cache_loc
        real(self)
        if old is not None and old.numel() == self.out_cache_loc.numel():
            self.out_cache_loc = old

    ScheduleBatch.prepare_for_decode = prepare_for_decode
    try:
        yield
    finally:
        ScheduleBatch.prepare_for_decode = real


@contextlib.contextmanager
def evict_frontier_one_ahead() -> Iterator[None]:
    """Spec §9.15 (eviction frontier overtaking the window): the scheduler's SWA eviction
    (``ScheduleBatch._evict_swa``) passes the tree a length one token longer than the request's,
    so the oldest token still inside the sliding window loses its SWA slot, which the allocator
    may hand to a new token while the batch still attends to it."""
    real = ScheduleBatch._evict_swa
    # a release that keeps one page more than the window (0.5.12: its frontier is
    # pre_len - window - page_size) is pushed that page further, so the frontier still
    # overtakes the window by one token
    keeps_page = "sliding_window_size - self.tree_cache.page_size" in inspect.getsource(real)

    def _evict_swa(self, req, pre_len, **kw):
        extra = self.tree_cache.page_size if keeps_page else 0
        return real(self, req, pre_len + 2 + extra, **kw)

    ScheduleBatch._evict_swa = _evict_swa
    try:
        yield
    finally:
        ScheduleBatch._evict_swa = real


#: name -> the patch (the sources: :data:`.hops.SERVER_MUTANTS`)
PATCHES = {
    "server_decode_stale_loc": decode_stale_out_cache_loc,
    "server_evict_in_window": evict_frontier_one_ahead,
    "server_graph_stale_tail": graph.stale_out_cache_loc_tail,
    "server_graph_seq_lens_pad_zero": graph.seq_lens_pad_zero,
    # applied in the attention-TP ranks' processes, to the release's _pad_inputs_to_size
    "server_pad_live_loc": lambda: registry.hook("sglang.server_pad_mutant")(
        "server_pad_live_loc"),
    **SPEC_PATCHES,
}


def patched(name: str | None):
    """The patch of server mutant ``name`` (None: nothing patched); the features' server
    mutants (hook ``sglang.server_mutants``) beside the pipeline's."""
    if name is None:
        return contextlib.nullcontext()
    if name in PATCHES:
        return PATCHES[name]()
    refs = {n: ref for table in registry.hooks("sglang.server_mutants")
            for n, (_src, ref) in table.items()}
    if name not in refs:
        raise KeyError(f"server mutant {name!r} (known: {', '.join([*PATCHES, *refs])})")
    return registry.load(refs[name])()  # only the named one's module (it may import SGLang)
