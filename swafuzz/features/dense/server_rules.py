"""What the server-level pipeline does not drive yet of the core path, as the ``dense`` record's
config refusals (``Refusal(level="server", ...)``; the reasons, naming the field, are in the
record; the speculative ones are ``spec_decode``'s, the ranks' ``dp``'s, the radix cache's
``radix_tree``'s). Each function takes a
server-level Case's ``ServerConfig``: plain Python."""

from __future__ import annotations


def graphs_without_sizes(c) -> bool:
    return not c.disable_cuda_graph and not c.cuda_graph_bs_decode
