"""Hypothesis strategy of server-level Cases with the radix cache on (kind ``server_radix``).

Requests in one or two prefix groups (or none) arrive staggered, some aborted, so prefixes are
shared while their first owner runs, branch at the group's prefix length, are cached when their
owner finishes, evicted (the SWA window's eviction interval, a tight SWA or full pool: the
tree's ``evict`` under memory pressure) and computed again. Page sizes 1, 2, 4 and 8 against a
window of 1..5 (below, equal to and above it), or, half the time with page > 1, a window longer
than a page and no whole number of pages; chunked prefill drawn, decode graphs (the
release's graph runner, buckets 1..4) a third of the time; the release's tree core (rust, its
default, or its Python core) drawn. Shrinks towards one group,
few requests, short prompts, a tight pool.
"""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.features.radix_tree.hit_bound import kept_tokens
from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate


@st.composite
def _request(draw, groups: tuple[int, ...], window: int, page: int) -> Request:
    g = draw(st.sampled_from((0, 0, None, 1)[:2 + len(groups)])) if groups else None
    prefix = groups[g] if g is not None else 0
    # a short own tail half the time: its insert keeps the shared prefix's window of SWA live,
    # so the next request of the group can match it
    prompt = prefix + draw(st.one_of(st.sampled_from((1, 1, 2)),
                                      st.integers(1, window + page + 2)))
    new = draw(st.integers(1, window + page + 3))
    arrive = draw(st.integers(0, 8))
    abort = arrive + draw(st.integers(0, new + 1)) if draw(st.integers(0, 4)) == 4 else None
    return Request(arrive_step=arrive, prompt_len=prompt, max_new_tokens=new, abort_step=abort,
                   prefix_group=g, prefix_len=prefix)


@st.composite
def radix_cases(draw) -> ServerCase:
    page = draw(st.sampled_from((1, 2, 4, 8)))
    if page > 1 and draw(st.booleans()):
        # a window longer than a page and no whole number of pages (127 with page 64, upstream's
        # measured shape): where rounding the SWA frontier to pages matters (window=page+rest)
        window = page * draw(st.integers(1, 2)) + draw(st.integers(1, page - 1))
    else:
        window = draw(st.integers(1, 5))
    layers = draw(st.integers(1, 2))
    # half the time a group prefix one token short of a page, at least max(window, page)
    # rounded up to pages long: a member whose own tail is one token publishes its prompt where
    # the SWA frontier's rounding to pages decides whether the key keeps a window of live SWA
    # (hit_bound.py)
    keep = kept_tokens(window, page)
    prefix = st.one_of(st.integers(1, 3 * window + 2 * page),
                       st.integers(0, 2).map(lambda m: keep + m * page + page - 1))
    groups = tuple(draw(st.lists(prefix, min_size=1, max_size=2)))
    reqs = tuple(draw(st.lists(_request(groups, window, page), min_size=1, max_size=6)))

    def pages(n: int) -> int:
        return -(-n // page) * page

    biggest = max(pages(r.prompt_len + r.max_new_tokens) + page for r in reqs)
    every = sum(pages(r.prompt_len + r.max_new_tokens) + page for r in reqs)
    # the full pool: from one request's worth (the tree evicted to admit the next) to every
    # token of every request (nothing evicted but by the window); shrinks towards tight
    full = biggest + 2 * page + pages(draw(st.integers(0, max(0, every - biggest))))
    swa = max(pages(max(r.prompt_len for r in reqs)) + 2 * page,
              len(reqs) * (pages(window + 1) + 2 * page))
    swa = max(swa, full - pages(draw(st.integers(0, max(0, full - swa)))))
    chunk = None
    if draw(st.booleans()):  # the adder's budget: chunked prefill
        chunk = draw(st.integers(1, max(r.prompt_len for r in reqs) + 4))
    interval = draw(st.sampled_from((1, 2, 4, 128)))
    core = draw(st.sampled_from(("rust", "python")))
    cfg = ServerConfig(page_size=page, disable_radix_cache=False, chunked_prefill_size=chunk)
    if draw(st.integers(0, 2)) == 2:  # decode graphs: the release's graph runner replays
        bs = tuple(sorted(draw(st.sets(st.integers(1, 4), min_size=1, max_size=3))))
        cfg = ServerConfig(page_size=page, disable_radix_cache=False, chunked_prefill_size=chunk,
                           disable_cuda_graph=False, cuda_graph_bs_decode=bs)
    case = ServerCase(config=cfg, model=ModelShape(layers=layers, sliding_window=window,
                                                   full_tokens=full + page, swa_tokens=swa,
                                                   row_bytes=16, swa_eviction_interval=interval,
                                                   tree_core=core),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)), kind="server_radix")
    validate(case)
    return case
