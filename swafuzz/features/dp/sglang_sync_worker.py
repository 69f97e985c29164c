"""A ``sglang_sync`` worker process (spawned by ``DPSync`` through :mod:`.sglang_sync_rank`, which
beats on the pipe while this module and SGLang import, and ends the rank when its parent is gone;
imports SGLang): one rank of the release's parallel state on gloo. :func:`bring_up` (a tiny model
config, no weights), then it answers the parent's pipe until told to stop. Patched probes:
``sglang_sync.PATCHED``.
"""

from __future__ import annotations

import os
import traceback

import torch.distributed as dist

from swafuzz.features.dp.sglang_sync_batch import model_runner, run_rank
from swafuzz.features.dp.sglang_sync_draft import run_draft_block
from swafuzz.machinery import Heartbeat


def bring_up(rank: int, port: int, server: dict, model_dir: str):
    """The release's parallel state for ``rank`` as a scheduler process builds it:
    ``ServerArgs``, ``publish``, ``init_parallel_runtime`` (distributed environment, model
    parallel, DP attention), ``init_layer_runtime`` (the DP gathered buffer); returns (runner
    stand-in, facts)."""
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.distributed import bootstrap
    from sglang.srt.runtime_context import SpawnRanks, get_parallel, publish
    from sglang.srt.server_args import ServerArgs

    sa = ServerArgs(model_path=model_dir, skip_tokenizer_init=True, device="cpu",
                    dist_timeout=int(server.pop("dist_timeout")), **server)
    publish(sa, role="scheduler", ranks=SpawnRanks(world_rank=rank, dp_rank=None, gpu_id=0))
    # Patched probe (sglang_sync.PATCHED): the CPU host's NUMA thread binding.
    bootstrap._bind_threads_if_cpu = lambda device: None
    bootstrap.init_parallel_runtime(server_args=sa, device="cpu", dist_port=port)
    # Patched probe (sglang_sync.PATCHED): no pinned-memory allocator on a host without CUDA.
    from sglang.srt.model_executor import forward_batch_info
    forward_batch_info._is_cpu = True
    model_config = ModelConfig.from_server_args(sa)
    # The scheduler seeds the MoE flags (the all-to-all backend the padding mode asks) for a
    # MoE model, as DeepSeek-V4 is; the stand-in config has no experts, so it is called here.
    from sglang.srt.layers.moe.utils import initialize_moe_config
    initialize_moe_config()
    bootstrap.init_layer_runtime(model_config=model_config)  # the DP gathered buffer's sizes
    runner = model_runner(model_config)
    p = get_parallel()
    from sglang.srt.utils.common import require_mlp_sync
    dp_on = getattr(p, "attn_dp_enabled", None)  # 0.5.21 names it enable_dp_attention
    facts = {"tp_size": p.tp_size, "attn_tp_size": p.attn_tp_size,
             "attn_tp_rank": p.attn_tp_rank, "attn_dp_size": p.attn_dp_size,
             "attn_dp_rank": p.attn_dp_rank,
             "attn_dp_enabled": bool(p.enable_dp_attention if dp_on is None else dp_on),
             "require_mlp_sync": bool(require_mlp_sync()),
             "tp_group_backend": str(dist.get_backend(p.tp_group.cpu_group))}
    return runner, facts


def scatter_guard(model_is_dsa: bool) -> dict:
    """``AttnTpContext.init_context`` as a model calls it (DeepSeek-V4: ``is_dsa=True``, no
    ``is_mhc``), with the platform probe set to CUDA (sglang_sync.PATCHED): whether the release would
    scatter an extend's input across the TP ranks (and so pad it to a multiple of tp_size)."""
    from sglang.srt.layers.layer_boundary.adapters import attention as adapter
    saved = adapter._is_cuda
    adapter._is_cuda = True
    try:
        ctx = adapter.AttnTpContext()
        ctx.init_context(q_lora_rank=1024, is_dsa=model_is_dsa)
        # the published prefill graph backend piecewise (0.5.21's default) forbids scattering
        # for every model: the answer's other reason, reported beside it
        check = getattr(adapter, "check_cuda_graph_backend", None)
        piecewise = bool(check and check(adapter.Phase.PREFILL, adapter.Backend.TC_PIECEWISE))
        return {"allow_input_scattered": bool(ctx.allow_input_scattered),
                "prefill_piecewise": piecewise}
    finally:
        adapter._is_cuda = saved


def main(rank: int, port: int, server: dict, model_dir: str, conn, hb: Heartbeat) -> None:
    """The rank, after :func:`.sglang_sync_rank.main` started its beat ``hb``: brought up,
    the beat stopped, the facts (or the error) sent."""
    try:
        runner, facts = bring_up(rank, port, dict(server), model_dir)
        hb.stop()
        conn.send(("ok", facts))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        hb.stop()
        conn.send(("err", traceback.format_exc()))
        os._exit(1)
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            try:
                if msg[0] == "step":
                    conn.send(("ok", run_rank(msg[1], runner, msg[2])))
                elif msg[0] == "draft_block":
                    conn.send(("ok", run_draft_block(msg[1], runner, msg[2])))
                elif msg[0] == "scatter_guard":
                    conn.send(("ok", scatter_guard(msg[1])))
                else:
                    conn.send(("err", f"unknown request {msg[0]!r}"))
            except BaseException:  # noqa: BLE001 - reported to the parent, which raises
                conn.send(("err", traceback.format_exc()))
    except (EOFError, OSError):
        pass
    # the process's end closes its gloo sockets; the release's destroy_* calls and its atexit
    # hooks only add seconds here
    os._exit(0)
