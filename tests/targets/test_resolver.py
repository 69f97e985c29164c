"""The backend's write-location resolution against spec statements (§4.2-§4.5, §4.8, §6).

Expected values are written out by hand or computed with plain Python lists, never with the code
under test.
"""

from __future__ import annotations

import pytest
import torch

from swafuzz import kernels
from swafuzz.scenarios.case import PoolConfig
from swafuzz.targets.backend import DSV4Backend, MultiStepBackend, per_step_draft_out_cache_loc
from swafuzz.targets.forward_mode import ForwardBatch, ForwardMode
from swafuzz.targets.kv_pool import SWAKVPool
from swafuzz.targets.metadata import (
    AttnMetadata,
    CoreAttnMetadata,
    RawDecodeMetadata,
    copy_metadata,
)

MAPPING = [2 * i for i in range(10)]  # upstream's test mapping: arange(10) * 2


def make_backend(mapping=None, **kw) -> DSV4Backend:
    cfg = PoolConfig(page_size=1, full_pages=8, swa_pages=8, layers=1, draft_layers=1)
    pool = SWAKVPool("target", cfg, 1, 0, kernels.get_impl("torch"))
    m = torch.tensor(MAPPING if mapping is None else mapping, dtype=torch.int64)
    pool.register_mapping(m)
    return DSV4Backend(pool, **kw)


def batch(loc, mode=ForwardMode.DECODE, bs=None) -> ForwardBatch:
    t = torch.tensor(loc, dtype=torch.int64)
    bs = len(loc) if bs is None else bs
    return ForwardBatch(mode, bs, t, torch.ones(bs, dtype=torch.int64), torch.zeros_like(t))


def cached_metadata(values) -> AttnMetadata:
    core = CoreAttnMetadata(page_size=1, raw_out_loc=None, seq_lens=torch.ones(1),
                            positions=torch.zeros(1),
                            swa_out_cache_loc=torch.tensor(values, dtype=torch.int32))
    return AttnMetadata(core)


# -- the four upstream cases (spec §6) --------------------------------------------------------


def test_no_metadata_translates_to_int32():
    be = make_backend()
    be.forward_metadata = None
    got = be.get_swa_out_cache_loc(batch([3, 4]))
    assert got.dtype == torch.int32
    assert got.tolist() == [6, 8]


def test_current_cache_is_returned_by_identity():
    be = make_backend()
    be.forward_metadata = cached_metadata([6, 8])
    got = be.get_swa_out_cache_loc(batch([3, 4]))
    assert got is be.forward_metadata.core_attn_metadata.swa_out_cache_loc


def test_stale_shape_falls_back_to_live_translation():
    be = make_backend()
    be.forward_metadata = cached_metadata([6, 8])
    got = be.get_swa_out_cache_loc(batch([3, 4, 0, 0], ForwardMode.DRAFT_EXTEND_V2))
    assert got.dtype == torch.int32
    assert got.tolist() == [6, 8, 0, 0]


def test_idle_never_uses_cache():
    be = make_backend()
    be.forward_metadata = cached_metadata([6, 8])
    got = be.get_swa_out_cache_loc(batch([0, 0], ForwardMode.IDLE))
    assert got is not be.forward_metadata.core_attn_metadata.swa_out_cache_loc
    assert got.tolist() == [0, 0]


# -- beyond the upstream test -------------------------------------------------------------------


def test_equal_length_stale_cache_is_returned():
    """§4.5: only the length is compared; the resolver cannot see content staleness, so an
    equal-length cache from an earlier forward is returned as it is (bug class 3 is the
    caller's to avoid)."""
    be = make_backend()
    be.forward_metadata = cached_metadata([6, 8])
    got = be.get_swa_out_cache_loc(batch([5, 7]))
    assert got is be.forward_metadata.core_attn_metadata.swa_out_cache_loc
    assert got.tolist() == [6, 8]  # not [10, 14]


@pytest.mark.parametrize("md", [
    RawDecodeMetadata(seq_lens=torch.ones(2, dtype=torch.int64),
                      out_cache_loc=torch.tensor([3, 4]), positions=torch.zeros(2)),
    object(),
    AttnMetadata(CoreAttnMetadata(1, None, torch.ones(2), torch.zeros(2), None)),
], ids=["raw", "foreign", "core-without-cache"])
def test_metadata_without_cache_falls_back(md):
    be = make_backend()
    be.forward_metadata = md
    got = be.get_swa_out_cache_loc(batch([3, 4]))
    assert got.dtype == torch.int32 and got.tolist() == [6, 8]


def test_raw_metadata_is_upgraded_in_graph():
    be = make_backend(prep_in_graph=True)
    fb = batch([3, 4])
    be.init_forward_metadata(fb)
    md = be.forward_metadata
    assert isinstance(md, AttnMetadata)
    assert md.core_attn_metadata.swa_out_cache_loc.tolist() == [6, 8]
    assert be.get_swa_out_cache_loc(fb) is md.core_attn_metadata.swa_out_cache_loc


def test_eager_idle_with_mtp_keeps_previous_metadata():
    """§4.3: topk > 0 and logically IDLE -> eager init returns early; the resolver's IDLE guard
    still sends every row to slot 0."""
    be = make_backend(topk=1)
    be.init_forward_metadata(batch([3, 4]))
    before = be.forward_metadata
    idle = batch([0, 0], ForwardMode.IDLE)
    be.init_forward_metadata(idle)
    assert be.forward_metadata is before
    assert be.get_swa_out_cache_loc(idle).tolist() == [0, 0]


def test_multi_step_per_step_slices():
    bs, topk, steps = 3, 2, 3
    loc = list(range(1, bs * topk * steps + 1))
    # plain Python: loc[b, k, s] = loc[(b*topk + k)*steps + s]; step s rows are b-major, then k
    want = [[loc[(b * topk + k) * steps + s] for b in range(bs) for k in range(topk)]
            for s in range(steps)]
    got = per_step_draft_out_cache_loc(torch.tensor(loc), bs, topk, steps)
    assert got.tolist() == want
    assert all(got[s].is_contiguous() for s in range(steps))
    mapping = [0] + [100 + i for i in range(len(loc))] + [0, -1]
    ms = MultiStepBackend([make_backend(mapping, topk=topk, num_steps=steps, step_id=s)
                           for s in range(steps)])
    fb = batch(loc, bs=bs)
    ms.init_forward_metadata_in_graph(fb)  # in-graph: every step backend slices its own step
    assert all(be.forward_metadata is None for be in ms.backends)  # in-graph builds nothing
    ms.init_forward_metadata(fb)  # eager: steps 0..n-2
    for s in range(steps - 1):
        swa = ms.backends[s].forward_metadata.core_attn_metadata.swa_out_cache_loc
        assert swa.tolist() == [mapping[f] for f in want[s]]
        step_fb = fb.view(out_cache_loc=got[s])
        assert ms.backends[s].get_swa_out_cache_loc(step_fb) is swa
    assert ms.backends[-1].forward_metadata is None  # the last step writes nothing


def test_out_graph_idle_substitution_and_padding():
    be = make_backend()
    cap = batch([0, 0, 0, 0])  # capture batch of bucket 4 over a static buffer
    be.init_forward_metadata_out_graph(cap, in_capture=True)
    persistent = be.forward_metadata
    core = persistent.core_attn_metadata
    assert core.raw_out_loc.tolist() == [0, 0, 0, 0] and core.swa_out_cache_loc is None
    # replay view of a live IDLE batch with stale-looking locations: substituted by zeros
    live = torch.tensor([5, 6], dtype=torch.int64)
    view = ForwardBatch(ForwardMode.DECODE, 4, live, torch.full((4,), 7, dtype=torch.int64),
                        torch.zeros(4, dtype=torch.int64), actual_forward_mode=ForwardMode.IDLE)
    be.init_forward_metadata_out_graph(view)
    assert be.forward_metadata is persistent
    assert core.raw_out_loc.tolist() == [0, 0, 0, 0]
    assert core.seq_lens.tolist() == [1, 1, 1, 1]
    # a live DECODE replay: real rows padded with 0 to the bucket
    view = view.view(actual_forward_mode=ForwardMode.DECODE)
    be.init_forward_metadata_out_graph(view)
    assert core.raw_out_loc.tolist() == [5, 6, 0, 0]
    assert core.seq_lens.tolist() == [7, 7, 7, 7]
    with pytest.raises(AssertionError, match="do not fit"):
        be.init_forward_metadata_out_graph(view.view(out_cache_loc=torch.arange(5)))


def test_swa_out_cache_loc_is_assigned_not_copied_across_replays():
    be = make_backend()
    cap = batch([0, 0])
    be.init_forward_metadata_out_graph(cap, in_capture=True)
    persistent = be.forward_metadata
    raw_before = persistent.core_attn_metadata.raw_out_loc
    be.init_forward_metadata_in_graph(cap)  # what the captured run_once does
    captured = persistent.core_attn_metadata.swa_out_cache_loc
    assert captured is not None and captured.tolist() == [0, 0]
    view = batch([3, 4]).view(actual_forward_mode=ForwardMode.DECODE)
    be.init_forward_metadata_out_graph(view)
    core = be.forward_metadata.core_attn_metadata
    assert be.forward_metadata is persistent
    assert core.swa_out_cache_loc is None  # the temp metadata's value, not the captured tensor
    assert core.raw_out_loc is raw_before and raw_before.tolist() == [3, 4]  # copied in place
    assert captured.tolist() == [0, 0]  # the captured tensor itself was not written


def test_copy_metadata_field_rules():
    a = CoreAttnMetadata(1, torch.tensor([1]), torch.ones(1), torch.zeros(1))
    b = CoreAttnMetadata(1, torch.tensor([0]), torch.ones(1), torch.zeros(1))
    with pytest.raises(AssertionError, match="exactly once"):
        copy_metadata(a, b, ("page_size",), ("raw_out_loc", "seq_lens"), ("swa_out_cache_loc",))
    with pytest.raises(AssertionError, match="page_size"):
        CoreAttnMetadata(2, None, torch.ones(1), torch.zeros(1)).copy_(b)
    b.swa_out_cache_loc = torch.tensor([9], dtype=torch.int32)
    with pytest.raises(AssertionError, match="swa_out_cache_loc"):  # as a copy field
        copy_metadata(a, b, ("page_size",), ("raw_out_loc", "seq_lens", "positions",
                                            "swa_out_cache_loc"), ())
