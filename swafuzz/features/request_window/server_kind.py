"""The request window's server-level kinds (opt-in: drawn only when named with ``--scenario``).
``server_window``: the core kinds' staggered draw (:func:`swafuzz.server.base_strategies.base_cases`)
with ``enable_encoder_swa_bounded_replay`` and attention TP 1 or 2 drawn last (shrinks to 1),
the sliding window rounded up to whole pages (the ring's capacity). ``server_window_tail``: one
or two requests with the late-layer tail on one rank, chunked prefill 384 (the release's minimum
with the window) and prompts just past it, so the last chunk's tail is shorter than the sliding
window. Both shrink towards one request; on 0.5.23 / 0.5.22 they meet the known ledger entries
``window-dp-extend-pad-joins-run`` / ``short-tail-floor``."""

from __future__ import annotations

from hypothesis import strategies as st

from swafuzz.server.base_strategies import base_cases
from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig, validate


def _window_config(draw, page: int, window: int) -> tuple[ServerConfig, int]:
    tp = draw(st.sampled_from((1, 2)))
    cfg = ServerConfig(page_size=page, enable_encoder_swa_bounded_replay=True,
                       tp_size=tp, moe_dense_tp_size=1 if tp == 2 else None)
    return cfg, -(-window // page) * page  # the ring's capacity is whole pages


def window_cases():
    """Kind ``server_window``."""
    return base_cases("server_window", last=_window_config)


@st.composite
def tail_cases(draw) -> ServerCase:
    """Kind ``server_window_tail``."""
    window = draw(st.integers(1, 16))
    chunk = 384
    reqs = tuple(Request(arrive_step=draw(st.integers(0, 2)),
                         prompt_len=chunk + draw(st.integers(1, 24)),
                         max_new_tokens=draw(st.integers(1, 3)))
                 for _ in range(draw(st.integers(1, 2))))
    need = sum(r.prompt_len + r.max_new_tokens + 1 for r in reqs) + 1
    cfg = ServerConfig(enable_encoder_swa_bounded_replay=True,
                       enable_decoder_swa_bounded_replay=True, chunked_prefill_size=chunk)
    case = ServerCase(config=cfg, model=ModelShape(layers=2, late_layer_start=1,
                                                   sliding_window=window, full_tokens=need + 1,
                                                   swa_tokens=need + 1, row_bytes=16),
                      requests=reqs, payload_seed=draw(st.integers(0, 3)),
                      kind="server_window_tail")
    validate(case)
    return case
