"""Where the server-level pipeline meets a release whose scheduler API differs (imports SGLang).

Each seam is chosen by what the release has (a module, method, parameter), never its version:

* runtime-context shape (0.5.22, 0.5.23): ``sglang.srt.runtime_context`` holds the server args,
  ``KVIndexTranslator`` binds a KV-location plan, the disabled radix cache is the registry's
  ``UnifiedRadixCache``, ``ForwardBatch.init_new`` takes the ``ScheduleBatch``, the can-run
  decision is ``DecodeCudaGraphRunner.can_run_graph``, a chunk is stashed by ``checkpoint_kv_cache``;
* global-server-args shape (0.5.12): ``set_global_server_args_for_scheduler``; no translator
  (``init_new`` translates via the allocator and takes the ``ModelWorkerBatch``);
  ``init_cache_with_memory_pool``'s rule picks ``SWAChunkCache`` (disabled radix + chunked
  prefill) else ``SWARadixCache(disable=True)``; ``CudaGraphRunner.can_run``; a chunk is stashed
  by ``maybe_cache_unfinished_req(..., chunked=True)``; ``retract_decode`` takes the server args.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from array import array
from types import SimpleNamespace
from typing import Iterator

from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.environ import set_attr

from sglang.srt.managers.schedule_batch import ScheduleBatch  # isort: skip
from sglang.srt.mem_cache import common  # isort: skip
from sglang.srt.model_executor.forward_batch_info import ForwardBatch  # isort: skip
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # isort: skip


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


RUNTIME_CONTEXT = _module("sglang.srt.runtime_context")
if RUNTIME_CONTEXT is not None and not hasattr(getattr(RUNTIME_CONTEXT, "RuntimeContext", None),
                                               "set_server_args"):  # pragma: no cover
    raise TargetUnavailable(
        "target sglang --level server: this release's runtime context is of the early shape "
        "(no RuntimeContext.set_server_args, 0.5.14), which the server level does not "
        "drive")
TRANSLATOR_MOD = _module("sglang.srt.mem_cache.kv_index_translator")
#: where alloc_for_extend's writer lives when it is not in ``mem_cache.common`` (None: absent)
ALLOCATION_MOD = _module("sglang.srt.mem_cache.allocation")
UNIFIED_COMPONENTS = _module("sglang.srt.mem_cache.unified_cache.components")
DECODE_RUNNER_MOD = _module("sglang.srt.model_executor.runner.decode_cuda_graph_runner")
#: ForwardBatch.init_new reads the ScheduleBatch itself (else its ModelWorkerBatch)
INIT_FROM_SCHEDULE_BATCH = "return_hidden_states_before_norm" in inspect.signature(
    ForwardBatch.init_new).parameters
#: retract_decode takes the server arguments
RETRACT_TAKES_ARGS = "server_args" in inspect.signature(ScheduleBatch.retract_decode).parameters
#: release_kv_cache's keyword for a checkpointed request (else it takes is_insert)
RELEASE_CHECKPOINT = "checkpoint" in inspect.signature(common.release_kv_cache).parameters
#: the shape in words (the hop table's column and the refusal name it)
SHAPE = "runtime-context" if RUNTIME_CONTEXT is not None else "global-server-args"


def token_ids(ids):
    """Token ids in the container the release's ``Req`` keeps them in (``array('q')`` where
    its ``output_ids`` is one, else a list: ``fill_ids`` concatenates the two), found by
    building one empty ``Req``."""
    if not hasattr(token_ids, "kind"):
        from sglang.srt.managers.schedule_batch import Req
        from sglang.srt.sampling.sampling_params import SamplingParams
        probe = Req("probe", "", array("q"), SamplingParams(max_new_tokens=1), vocab_size=1)
        token_ids.kind = type(probe.output_ids)
    return array("q", ids) if token_ids.kind is array else list(ids)


@contextlib.contextmanager
def cpu_platform() -> Iterator[None]:
    """The run as on a CPU platform, with :func:`one_rank_groups`. 0.5.12's ``support_triton``
    (no platform check) says yes here, so ``write_cache_indices`` / ``compute_position`` would
    launch Triton kernels the interpreter cannot run (pointers from a uint64 tensor); its modules
    get 0.5.23's answer (no), so the release's torch branches run; also where the writer lives
    in ``mem_cache.allocation`` (0.5.18 .. 0.5.21 bind ``support_triton`` there)."""
    from sglang.srt.model_executor import forward_batch_info
    from sglang.srt.utils import common as utils
    with contextlib.ExitStack() as stack:
        if utils.support_triton("triton"):  # no platform check: it says yes on a CPU
            for mod in (common, forward_batch_info, ALLOCATION_MOD):
                if hasattr(mod, "support_triton"):
                    stack.enter_context(set_attr(mod, "support_triton", lambda backend: False))
        stack.enter_context(one_rank_groups())
        yield


@contextlib.contextmanager
def one_rank_groups() -> Iterator[None]:
    """A one-rank expert-parallel group where 0.5.12's ``ForwardBatch.init_new`` asks for its
    size (``enable_num_token_non_padded``) and the process has none."""
    from sglang.srt.distributed import parallel_state as ps
    if getattr(ps, "_MOE_EP", "absent") is not None:
        yield
        return
    with set_attr(ps, "_MOE_EP", SimpleNamespace(world_size=1, rank_in_group=0)):
        yield


#: filter_batch's keyword for the requests to leave out (0.5.12: the chunked ones)
EXCLUDE_KW = next((k for k in ("reqs_to_exclude", "chunked_req_to_exclude")
                   if k in inspect.signature(ScheduleBatch.filter_batch).parameters), None)
if EXCLUDE_KW is None:  # pragma: no cover - depends on the release
    raise TargetUnavailable("target sglang --level server: the release's "
                            "ScheduleBatch.filter_batch takes neither reqs_to_exclude nor "
                            "chunked_req_to_exclude")


def filter_out(batch, reqs) -> None:
    """The release's ``filter_batch`` leaving ``reqs`` out."""
    batch.filter_batch(**{EXCLUDE_KW: reqs})


def prefix_len(req) -> int:
    """How many tokens of the request the cache already holds (its matched prefix)."""
    return req.prefix_len if hasattr(req, "prefix_len") else len(req.prefix_indices)


def chunk_end(req, end: int) -> None:
    """The adder's chunk: the extend stops at token ``end`` (``extend_end``, 0.5.21's
    ``extend_range``; 0.5.12 truncates ``fill_ids`` and sets the extend length, as its adder)."""
    if hasattr(req, "extend_end"):
        req.extend_end = end
    elif hasattr(req, "set_extend_range"):  # 0.5.21: the round's [prefix, end) as a Range
        req.set_extend_range(prefix_len(req), end)
    elif end < len(req.fill_ids):
        req.set_extend_input_len(end - prefix_len(req))
        req.fill_ids = req.fill_ids[:end]


def fill_end(req) -> int:
    """Where the request's extend stops (the token after its last filled one), as
    :func:`chunk_end` set it: ``extend_end``, ``extend_range.end`` (0.5.18 .. 0.5.21), else
    the length of its ``fill_ids`` (0.5.12)."""
    if hasattr(req, "extend_end"):
        return int(req.extend_end)
    if getattr(req, "extend_range", None) is not None:
        return int(req.extend_range.end)
    return len(req.fill_ids)


def hand_sampled(batch, sampled) -> None:
    """The last sampled token per request, where the release's ``prepare_for_decode`` reads it
    from the batch's ``output_ids`` (0.5.12: the scheduler sets it from the sampler's result)
    rather than ``input_ids``."""
    if "output_ids" in ScheduleBatch.__dataclass_fields__:
        batch.output_ids = sampled


def install_server_args(sa) -> None:
    """The server arguments as the release's process holds them."""
    if RUNTIME_CONTEXT is not None:
        RUNTIME_CONTEXT.get_context().set_server_args(sa)
    else:
        from sglang.srt.server_args import set_global_server_args_for_scheduler
        set_global_server_args_for_scheduler(sa)


def tree_cache(params, chunked_prefill_size, sliding_window):
    """The tree cache the release's scheduler builds for a disabled radix cache on a hybrid
    SWA model (its registry's choice, or its ``init_cache_with_memory_pool`` rule)."""
    if UNIFIED_COMPONENTS is not None:
        from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
        ct = UNIFIED_COMPONENTS.ComponentType
        params.tree_components = (ct.FULL, ct.SWA)
        return UnifiedRadixCache(params)
    if chunked_prefill_size is not None:
        from sglang.srt.mem_cache.chunk_cache import SWAChunkCache
        return SWAChunkCache(params)
    from sglang.srt.mem_cache.swa_radix_cache import SWARadixCache
    return SWARadixCache(params=params)


def translator(req_to_token_pool, allocator, pool, page_size: int, device: str):
    """The release's KVIndexTranslator, or None where ForwardBatch translates on its own."""
    if TRANSLATOR_MOD is None:
        return None
    return TRANSLATOR_MOD.KVIndexTranslator(
        req_to_token=req_to_token_pool.req_to_token, token_to_kv_pool_allocator=allocator,
        token_to_kv_pool=pool, page_size=page_size, device=device)


def forward_batch(batch, model_runner):
    """The release's ``ForwardBatch.init_new`` from the scheduler batch."""
    if INIT_FROM_SCHEDULE_BATCH:
        return ForwardBatch.init_new(batch, model_runner, return_hidden_states_before_norm=False)
    if not hasattr(batch, "get_model_worker_batch"):  # 0.5.15: reads the ScheduleBatch itself
        return ForwardBatch.init_new(batch, model_runner)
    return ForwardBatch.init_new(batch.get_model_worker_batch(), model_runner)


def retract(batch, server_args):
    return batch.retract_decode(server_args) if RETRACT_TAKES_ARGS else batch.retract_decode()


def stash_chunk(req, tree) -> None:
    """The scheduler's stash of a partially prefilled request."""
    if hasattr(common, "checkpoint_kv_cache"):
        common.checkpoint_kv_cache(req, tree)
    else:
        common.maybe_cache_unfinished_req(req, tree, chunked=True)


def release(req, tree) -> None:
    """The release's free path for a finished or aborted request."""
    if RELEASE_CHECKPOINT:
        common.release_kv_cache(req, tree, checkpoint=False)
    else:
        common.release_kv_cache(req, tree)


def graph_runner(buckets):
    """A constructor-less decode graph runner with what its can-run decision reads (one rank, no
    spec, no LoRA), and that decision as a bound method."""
    if DECODE_RUNNER_MOD is not None:
        r = object.__new__(DECODE_RUNNER_MOD.DecodeCudaGraphRunner)
        r.ragged_verify_mode = False
        r.captured_req_width = r.num_tokens_per_bs = 1  # 0.5.15 names it num_tokens_per_bs
        r.require_attn_tp_gather = False
        r.attention_graph_variants = None
        r.enable_return_hidden_states = False  # read by 0.5.16's can_run_graph
        decide = r.can_run_graph
    else:
        from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner
        from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
        r = object.__new__(CudaGraphRunner)
        r.num_tokens_per_bs = 1
        r.graphs = {}
        r.capture_hidden_mode = CaptureHiddenMode.NULL
        decide = r.can_run
    r.capture_bs, r.max_bs = list(buckets), max(buckets)
    for name in ("require_mlp_tp_gather", "require_mlp_sync", "enable_pdmux", "record_nolora_graph",
                 "disable_padding", "is_encoder_decoder", "enable_two_batch_overlap"):
        setattr(r, name, False)
    r.model_runner = SimpleNamespace(spec_algorithm=SpeculativeAlgorithm.NONE)
    return decide
