"""What the server-level pipeline does not drive yet of speculative decoding, as the
``spec_decode`` record's config refusals (``Refusal(level="server", ...)``; the reasons, naming
the field, are in the record). Each function takes a server-level Case's ``ServerConfig``: plain
Python."""

from __future__ import annotations


def spec_driven(c) -> bool:
    """Whether the speculative pipeline drives ``c`` (EAGLE, top-k 1, a chain of
    ``speculative_num_steps + 1`` draft tokens, one rank, eager or with decode graphs; more
    ranks: ``dp``'s rules; top-k above 1: :func:`spec_tree`)."""
    return (c.speculative_algorithm == "EAGLE" and c.speculative_eagle_topk == 1
            and c.speculative_num_draft_tokens == (c.speculative_num_steps or 0) + 1
            and c.tp_size == 1)


def spec_tree(c) -> bool:
    """EAGLE with a draft tree (top-k above 1): the release refuses it for DeepSeek-V4."""
    return c.speculative_algorithm == "EAGLE" and (c.speculative_eagle_topk or 1) > 1


def spec_not_driven(c) -> bool:
    return c.speculative_algorithm is not None and not spec_tree(c) and not spec_driven(c)


def spec_on_dp_ranks(c) -> bool:
    return c.enable_dp_attention and c.speculative_algorithm is not None
