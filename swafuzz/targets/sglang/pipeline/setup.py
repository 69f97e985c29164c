"""What a server-level run builds once (imports SGLang): the release's server arguments from the
Case's config, installed as its process holds them, the component engine's real allocator /
DSV4 pool / backend, the release's ReqToTokenPool, tree cache and (where it has one)
KVIndexTranslator, and a model-runner stand-in; where releases differ: :mod:`.seams`.
"""

from __future__ import annotations

from types import SimpleNamespace

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig
from swafuzz.server.case import ServerCase
from swafuzz.server.timeline import VOCAB
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.engine import SGLangEngine
from swafuzz.targets.sglang.real import VERSION

try:
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.server_args import ServerArgs

    from swafuzz.targets.sglang.pipeline import argnames, seams
except ImportError as e:  # pragma: no cover - depends on the release
    raise TargetUnavailable(
        f"target sglang --level server: sglang {VERSION} lacks a hop of the server-level "
        f"pipeline ({e}); it is driven on the runtime-context shape (0.5.22, 0.5.23) and the "
        "global-server-args shape (0.5.12)") from None

#: the ServerArgs fields the Case sets, besides its config (a CPU process, no model files)
BASE_ARGS = {"model_path": "dummy", "device": "cpu", "skip_server_warmup": True}


def component_case(case: ServerCase) -> Case:
    """The component Case whose engine the pipeline borrows its allocator, pools and backend
    from (no steps: the pipeline drives them)."""
    m, P = case.model, case.config.page_size
    pool = PoolConfig(page_size=P, full_pages=m.full_tokens // P, swa_pages=m.swa_tokens // P,
                      window=m.sliding_window, layers=m.layers, draft_layers=1,
                      row_width=m.row_bytes)
    c = case.config
    spec = {} if c.speculative_algorithm is None else dict(  # the draft's backends
        topk=c.speculative_eagle_topk, num_steps=c.speculative_num_steps,
        num_draft_tokens=c.speculative_num_draft_tokens)
    graph = GraphConfig(buckets=graph_buckets(case) or GraphConfig().buckets, **spec)
    return Case(pool=pool, graph=graph, payload_seed=case.payload_seed, kind=case.kind)


def graph_buckets(case: ServerCase) -> tuple[int, ...]:
    """The decode graph batch sizes the server captures (none with disable_cuda_graph)."""
    c = case.config
    return () if c.disable_cuda_graph or not c.cuda_graph_bs_decode else c.cuda_graph_bs_decode


def decode_graph_runner(case: ServerCase):
    """The release's decode graph runner's can-run decision (:func:`.seams.graph_runner`);
    None without graphs."""
    buckets = graph_buckets(case)
    return seams.graph_runner(buckets) if buckets else None


def install_server_args(case: ServerCase) -> object:
    """The release's ServerArgs for the Case, installed as the runtime context."""
    sa = ServerArgs(**BASE_ARGS, **argnames.release_config(case.config.server_args()))
    seams.install_server_args(sa)
    return sa


class ModelRunnerStandIn:
    """What ``ForwardBatch.init_new`` reads from its model runner here: the translator
    (runtime-context shape), or the pools, allocator and server args (global-server-args)."""

    def __init__(self, translator, device: str, server=None):
        self.is_draft_worker = False
        self.device = device
        self.model_config = SimpleNamespace(vocab_size=VOCAB, is_encoder_decoder=False,
                                            model_is_mrope=False,
                                            requires_mm_token_modalities=False,
                                            is_matryoshka=False)  # ForwardBatch reads it
        self.kv_index_translator = translator
        self.lora_manager = None
        self.prefill_attention_backend_str = "dsv4"
        self.ngram_embedding_manager = SimpleNamespace(enabled=False)
        self.attn_dcp_size, self.attn_dcp_rank = 1, 0  # 0.5.21 reads them: no decode CP
        self.ps = SimpleNamespace(attn_dcp_size=1, attn_dcp_rank=0)  # 0.5.18 .. 0.5.20's
        if server is not None:
            self.server_args = server.server_args
            self.req_to_token_pool = server.req_to_token_pool
            self.token_to_kv_pool = server.engine.target_pool.real
            self.token_to_kv_pool_allocator = server.allocator
            self.attn_backend = None  # read into the ForwardBatch, never called on this path
            self.use_ngram_embedding = False
            self.model_is_mrope = False
            self.is_hybrid_swa = True


class Server:
    """The pieces of one server-level run."""

    def __init__(self, case: ServerCase, impl: str = "torch", executor=None):
        self.case = case
        self.server_args = install_server_args(case)
        self.engine = SGLangEngine(component_case(case), impl=impl, executor=executor)
        self.graph_runner = decode_graph_runner(case)
        eng = self.engine
        self.allocator = eng.allocator.real
        dev = str(eng.device)
        m = case.model
        self.req_to_token_pool = ReqToTokenPool(
            size=len(case.requests) + 1, max_context_len=m.full_tokens + case.config.page_size,
            device=dev, enable_memory_saver=False)
        params = CacheInitParams(
            disable=case.config.disable_radix_cache, req_to_token_pool=self.req_to_token_pool,
            token_to_kv_pool_allocator=self.allocator, page_size=case.config.page_size,
            sliding_window_size=m.sliding_window,
            chunked_prefill_size=case.config.chunked_prefill_size)
        self.tree_cache = seams.tree_cache(params, self.server_args.chunked_prefill_size,
                                           m.sliding_window)
        self.translator = seams.translator(self.req_to_token_pool, self.allocator,
                                           eng.target_pool.real, case.config.page_size, dev)
        self.model_runner = ModelRunnerStandIn(
            self.translator, dev, None if self.translator is not None else self)
