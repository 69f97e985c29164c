"""What a server-level run builds once (imports SGLang): the release's runtime context from the
Case's server arguments, the component engine's real allocator / DSV4 pool / backend, the
release's ReqToTokenPool, tree cache and KVIndexTranslator, and a model-runner stand-in.
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
    from sglang.srt import runtime_context
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.kv_index_translator import KVIndexTranslator
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.mem_cache.unified_cache.components import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
    from sglang.srt.model_executor.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
except ImportError as e:  # pragma: no cover - depends on the release
    raise TargetUnavailable(
        f"target sglang --level server: sglang {VERSION} lacks a hop of the server-level "
        f"pipeline ({e}); it is driven on 0.5.23's runtime context, KVLocPlan and "
        "UnifiedRadixCache") from None

#: the ServerArgs fields the Case sets, besides its config (a CPU process, no model files)
BASE_ARGS = {"model_path": "dummy", "device": "cpu", "skip_server_warmup": True}


def component_case(case: ServerCase) -> Case:
    """The component Case whose engine the pipeline borrows its allocator, pools and backend
    from (no steps: the pipeline drives them)."""
    m, P = case.model, case.config.page_size
    pool = PoolConfig(page_size=P, full_pages=m.full_tokens // P, swa_pages=m.swa_tokens // P,
                      window=m.sliding_window, layers=m.layers, draft_layers=1,
                      row_width=m.row_bytes)
    graph = GraphConfig(buckets=graph_buckets(case) or GraphConfig().buckets)
    return Case(pool=pool, graph=graph, payload_seed=case.payload_seed, kind=case.kind)


def graph_buckets(case: ServerCase) -> tuple[int, ...]:
    """The decode graph batch sizes the server captures (none with disable_cuda_graph)."""
    c = case.config
    return () if c.disable_cuda_graph or not c.cuda_graph_bs_decode else c.cuda_graph_bs_decode


def decode_graph_runner(case: ServerCase):
    """The release's ``DecodeCudaGraphRunner`` built without its constructor (which captures
    graphs on a GPU), holding the attributes its ``can_run_graph`` reads for a one-rank,
    non-speculative, non-LoRA decode server; None without graphs."""
    buckets = graph_buckets(case)
    if not buckets:
        return None
    r = object.__new__(DecodeCudaGraphRunner)
    r.capture_bs = list(buckets)
    r.max_bs = max(buckets)
    r.ragged_verify_mode = False
    r.captured_req_width = 1
    r.require_mlp_tp_gather = False
    r.require_mlp_sync = False
    r.require_attn_tp_gather = False
    r.enable_pdmux = False
    r.record_nolora_graph = False
    r.disable_padding = False
    r.attention_graph_variants = None
    r.is_encoder_decoder = False
    r.enable_two_batch_overlap = False
    r.model_runner = SimpleNamespace(spec_algorithm=SpeculativeAlgorithm.NONE)
    return r


def install_server_args(case: ServerCase) -> object:
    """The release's ServerArgs for the Case, installed as the runtime context."""
    sa = ServerArgs(**BASE_ARGS, **case.config.server_args())
    runtime_context.get_context().set_server_args(sa)
    return sa


class ModelRunnerStandIn:
    """Exactly the attributes the release's ``ForwardBatch.init_new`` reads from its model
    runner on this path (no model, no LoRA, no n-gram embedding)."""

    def __init__(self, translator, device: str):
        self.is_draft_worker = False
        self.device = device
        self.model_config = SimpleNamespace(vocab_size=VOCAB, is_encoder_decoder=False,
                                            model_is_mrope=False,
                                            requires_mm_token_modalities=False)
        self.kv_index_translator = translator
        self.lora_manager = None
        self.prefill_attention_backend_str = "dsv4"
        self.ngram_embedding_manager = SimpleNamespace(enabled=False)


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
            chunked_prefill_size=case.config.chunked_prefill_size,
            tree_components=(ComponentType.FULL, ComponentType.SWA))
        self.tree_cache = UnifiedRadixCache(params)
        self.translator = KVIndexTranslator(
            req_to_token=self.req_to_token_pool.req_to_token,
            token_to_kv_pool_allocator=self.allocator, token_to_kv_pool=eng.target_pool.real,
            page_size=case.config.page_size, device=dev)
        self.model_runner = ModelRunnerStandIn(self.translator, dev)
