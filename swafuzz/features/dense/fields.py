"""The server level's core Case fields (the dense base): the release's ``ServerArgs`` that shape
every server Case, the model shape the harness needs and a request's timeline. The component
level's base fields are the core's own (``scenarios.schema.BASE_FIELDS``). The speculative fields
are ``spec_decode``'s (``features/spec_decode/fields.py``), the data-parallel ones ``dp``'s."""

from swafuzz.features.case_field import CaseField

MAX_REQUESTS, MAX_STEPS = 16, 256  # batch sizes / prefix groups; scheduling steps


def _c(name, type, default, doc, **kw):
    """A ``config`` field every version-1 server bundle carries (emitted at its default)."""
    return CaseField("config", name, type, default, doc, always=True, **kw)


def _m(name, default, doc, lo, hi, **kw):
    return CaseField("model", name, "int", default, doc, lo=lo, hi=hi, always=True, **kw)


def _r(name, type, default, doc, lo, hi):
    return CaseField("request", name, type, default, doc, lo=lo, hi=hi, always=True)


FIELDS = (
    _c("tp_size", "int", 1, "tensor-parallel ranks", lo=1, hi=8),
    _c("page_size", "int", 1, "tokens per page", lo=1, hi=64, pow2=True),
    _c("cuda_graph_bs_decode", "tuple[int, ...] | None", None, "captured decode batch sizes",
       lo=1, hi=MAX_REQUESTS, increasing=True),
    _c("disable_cuda_graph", "bool", True, "no captured graphs"),
    _c("chunked_prefill_size", "int | None", None, "prefill chunk tokens", lo=1, hi=1 << 20),
    _c("disable_radix_cache", "bool", True, "no radix (prefix) cache"),
    _m("layers", 2, "attention layers", 1, 8),
    _m("sliding_window", 4, "the sliding window in tokens", 1, 4096),
    _m("full_tokens", 256, "full-attention pool tokens", 1, 1 << 16),
    _m("swa_tokens", 128, "SWA pool tokens", 1, 1 << 16),
    _m("row_bytes", 16, "bytes of one K row", 8, 64, pow2=True),
    _m("swa_eviction_interval", 128, "SGLANG_SWA_EVICTION_INTERVAL: out-of-window SWA tokens "
       "are freed once this many have slid out (0.5.23 default 128)", 1, 1 << 16),
    _r("arrive_step", "int", 0, "the scheduling step it arrives at", 0, MAX_STEPS),
    _r("prompt_len", "int", 4, "prompt tokens", 1, 512),
    _r("prefix_group", "int | None", None, "requests of one group share a prompt prefix", 0,
       MAX_REQUESTS),
    _r("prefix_len", "int", 0, "the group's shared leading prompt tokens", 0, 512),
    _r("max_new_tokens", "int", 2, "tokens it generates at most", 1, 64),
    _r("abort_step", "int | None", None, "the step it is aborted at (null: never)", 0, MAX_STEPS),
)
