"""The attention-TP rules at server level (plain Python): the ``dp`` record's config refusals (each
takes a ``ServerConfig``; the reasons are in the record) and the padding the MLP sync gives a
batch on attention-TP ranks (the oracle part's ``server_pad``).
"""

from __future__ import annotations


def ranks_not_driven(c) -> bool:
    """Neither one rank, attention TP 2 (moe_dense_tp_size 1) nor two DP-attention ranks."""
    ranks = (c.tp_size, c.dp_size, c.enable_dp_attention)
    return ranks not in ((1, 1, False), (2, 2, True)) and not (
        ranks == (2, 1, False) and c.moe_dense_tp_size == 1)


def graphs_on_tp_ranks(c) -> bool:
    return c.tp_size > 1 and not c.disable_cuda_graph


def attn_tp_rows(case, mode: str, rows: int, bs: int, exec_: str):
    """The rows and batch size an eager forward runs with after the MLP sync's padding (spec
    §5.4): with attention TP T > 1 the token count rounds up to a multiple of T, a DECODE's
    batch size with it; None without padding."""
    T = case.config.attn_tp_size()
    if T == 1 or exec_ != "eager":
        return None
    padded = -(-rows // T) * T
    return padded, (padded if mode == "DECODE" else bs)


def prefill_graph_not_driven(c) -> bool:
    """A prefill graph (backend or captured token counts) outside what the ranks' vote drives:
    two attention-DP ranks (tp 2, dp 2), no pplx, no encoder replay, the breakable backend with
    its captured token counts."""
    if c.cuda_graph_backend_prefill is None and not c.cuda_graph_bs_prefill:
        return False
    return ((c.tp_size, c.dp_size, c.enable_dp_attention) != (2, 2, True)
            or c.moe_a2a_backend is not None or c.enable_encoder_swa_bounded_replay
            or c.cuda_graph_backend_prefill is None or not c.cuda_graph_bs_prefill)

