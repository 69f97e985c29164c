"""What the server-level pipeline does not drive yet, as the ``dense`` record's config refusals
(``Refusal(level="server", ...)``; the reasons, naming the field, are in the record). Each
function takes a server-level Case's ``ServerConfig``: plain Python."""

from __future__ import annotations


def spec_driven(c) -> bool:
    """Whether the speculative pipeline drives ``c`` (EAGLE, top-k 1, a chain of
    ``speculative_num_steps + 1`` draft tokens, eager, one rank; more ranks: the rules after)."""
    return (c.speculative_algorithm == "EAGLE" and c.speculative_eagle_topk == 1
            and c.speculative_num_draft_tokens == (c.speculative_num_steps or 0) + 1
            and c.disable_cuda_graph and c.tp_size == 1)


def spec_not_driven(c) -> bool:
    return c.speculative_algorithm is not None and not spec_driven(c)


def ranks_not_driven(c) -> bool:
    """Neither one rank, attention TP 2 (moe_dense_tp_size 1) nor two DP-attention ranks."""
    ranks = (c.tp_size, c.dp_size, c.enable_dp_attention)
    return ranks not in ((1, 1, False), (2, 2, True)) and not (
        ranks == (2, 1, False) and c.moe_dense_tp_size == 1)


def spec_on_dp_ranks(c) -> bool:
    return c.enable_dp_attention and c.speculative_algorithm is not None


def graphs_on_tp_ranks(c) -> bool:
    return c.tp_size > 1 and not c.disable_cuda_graph


def graphs_without_sizes(c) -> bool:
    return not c.disable_cuda_graph and not c.cuda_graph_bs_decode


def radix_cache(c) -> bool:
    return not c.disable_radix_cache
