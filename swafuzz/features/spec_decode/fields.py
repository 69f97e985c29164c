"""The server-level Case fields of speculative decoding: the release's ``ServerArgs`` speculative
settings and a request's accept lengths (contract: ``SEMANTICS.md`` here; cross-field rules:
``swafuzz.server.case.validate``; the component level's are ``GraphConfig``'s).
"""

from swafuzz.features.case_field import CaseField


def _c(name, type, after, doc, **kw):
    """A ``config`` field every version-1 server bundle carries (emitted at its default)."""
    return CaseField("config", name, type, None, doc, always=True, after=after, **kw)


FIELDS = (
    _c("speculative_algorithm", "str | None", "tp_size", "speculative decoding (null: none)",
       choices=("EAGLE", "EAGLE3", "NEXTN")),
    _c("speculative_num_steps", "int | None", "speculative_algorithm",
       "draft steps (with an algorithm)", lo=1, hi=8),
    _c("speculative_eagle_topk", "int | None", "speculative_num_steps",
       "draft top-k (with an algorithm)", lo=1, hi=8),
    _c("speculative_num_draft_tokens", "int | None", "speculative_eagle_topk",
       "draft tokens verified per step", lo=1, hi=16),
    CaseField("request", "accept_lengths", "tuple[int, ...]", (),
              "speculative: tokens accepted at its i-th decode", lo=1, hi=16, always=True),
)
