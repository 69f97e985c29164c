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
