"""The attention-TP padding hop of the server-level pipeline (issue 18 item 2; imports no SGLang,
the ranks do).

A server Case with attention TP > 1 (``tp_size=2, moe_dense_tp_size=1``, no DP attention: both
ranks hold the same batch) runs rank 0's pipeline here; per forward :func:`pad` hands the batch to
every rank of a :class:`DPSync` (the release's token-count gather, ``prepare_mlp_sync_batch``'s
``ceil_align(num_tokens, attn_tp_size)``, ``_pad_inputs_to_size``) and returns rank 0's padded
``out_cache_loc`` / ``positions`` / ``seq_lens`` for the store. One :class:`DPSync` per process and
server shape, started at the first padded forward, closed at exit (:func:`close_all`, ``atexit``).
:data:`SERVER_RELEASE_MUTANTS` are applied in the ranks for one Case's forwards
(:func:`release_mutant`).
"""

from __future__ import annotations

import atexit
import contextlib
from typing import Iterator

from swafuzz.features.dp.sglang_sync import DPSync, DPSyncError, RankInput, ServerShape

#: server mutant -> the rank-side release mutant (sglang_sync.RELEASE_MUTANTS) it switches on
SERVER_RELEASE_MUTANTS = {"server_pad_live_loc": "pad_live_loc",
                          "server_pad_seq_lens_zero": "seq_lens_fill_0"}

_SYNCS: dict[tuple, DPSync] = {}
_ACTIVE: list[str | None] = [None]


def rank_shape(config) -> tuple[ServerShape, dict[str, str]]:
    """The ranks' server arguments for a server-level ``config`` (TP / DP sizes, DP attention, dense
    MoE TP size, MoE all-to-all backend, prefill graph switch, backend and captured token
    counts, as set) and the deployment's
    environment. Bounded replay stays off on the ranks: their token count reads encoder replay only
    through rows folded from a cached prefix (no radix cache at server level)."""
    extra = {k: getattr(config, k) for k in ("moe_a2a_backend", "disable_prefill_cuda_graph",
                                             "cuda_graph_backend_prefill")
             if getattr(config, k) != getattr(type(config)(), k)}
    if config.cuda_graph_bs_prefill:  # the prefill graph's captured token counts (a list)
        extra["cuda_graph_bs_prefill"] = list(config.cuda_graph_bs_prefill)
    shape = ServerShape(tp_size=config.tp_size, dp_size=config.dp_size,
                        enable_dp_attention=config.enable_dp_attention,
                        moe_dense_tp_size=config.moe_dense_tp_size, extra=extra)
    return shape, config.env_dict()


def _key(config) -> tuple:
    shape, env = rank_shape(config)
    args = {k: tuple(v) if isinstance(v, list) else v for k, v in shape.server_args().items()}
    return (tuple(sorted(args.items())), tuple(sorted(env.items())))


def sync_for(config) -> DPSync:
    """The process's DPSync for ``config``'s shape (started on first use)."""
    key = _key(config)
    if key not in _SYNCS:
        shape, env = rank_shape(config)
        _SYNCS[key] = DPSync(shape, env=env).__enter__()
    return _SYNCS[key]


def close_all() -> None:
    """Stop every DPSync this process started."""
    while _SYNCS:
        _SYNCS.popitem()[1].close()


atexit.register(close_all)


@contextlib.contextmanager
def release_mutant(server_mutant: str) -> Iterator[None]:
    """While it is open, every padded forward runs with ``server_mutant``'s rank-side patch."""
    _ACTIVE[0] = SERVER_RELEASE_MUTANTS[server_mutant]
    try:
        yield
    finally:
        _ACTIVE[0] = None


def pad_live_loc():
    """Server mutant ``server_pad_live_loc`` (:mod:`.mutants`): the ranks' padding keeps live
    locations in the padded rows."""
    return release_mutant("server_pad_live_loc")


def pad_seq_lens_zero():
    """Server mutant ``server_pad_seq_lens_zero``: the ranks' padding fills the padded rows'
    ``seq_lens`` with 0."""
    return release_mutant("server_pad_seq_lens_zero")


def active_mutant() -> str | None:
    """The rank-side release mutant the open :func:`release_mutant` switched on, or None."""
    return _ACTIVE[0]


def pad(config, mode: str, seq_lens: list[int], extend_lens: list[int],
        out_cache_loc: list[int]) -> dict:
    """Rank 0's batch after the release's padding, every rank holding this batch (``mode``:
    "DECODE" or "EXTEND"): ``out_cache_loc``, ``positions``, ``seq_lens``, ``batch_size``,
    ``padding_mode``. The ranks must agree (they hold the same batch)."""
    rank = RankInput(mode=mode.lower(), seq_lens=tuple(seq_lens),
                     extend_lens=tuple(extend_lens) if mode == "EXTEND" else (),
                     out_cache_loc=tuple(out_cache_loc))
    sync = sync_for(config)
    try:
        res = sync.step([rank] * config.tp_size, mutant=_ACTIVE[0])
    except DPSyncError:
        _SYNCS.pop(_key(config), None)
        raise
    if not res[0].get("ran"):
        raise DPSyncError(f"rank 0 ran no forward for a {mode} batch")
    padded = [r["padded"] for r in res]
    if any(p != padded[0] for p in padded[1:]):
        raise DPSyncError(f"the ranks padded the same batch differently: {padded}")
    p = padded[0]
    return {k: p[k] for k in ("out_cache_loc", "positions", "seq_lens", "batch_size",
                              "padding_mode")}
