"""The release's MLP-sync and DP / attention-TP padding on real process groups.

:class:`DPSync` spawns one process per TP rank (``tp_size``, default 2), each bringing up SGLang's
parallel state on gloo over 127.0.0.1 (:mod:`.sglang_sync_rank`, then :mod:`.sglang_sync_worker`);
:meth:`DPSync.step` hands every rank its :class:`RankInput` and returns what the release's padding
made of it (:mod:`.sglang_sync_batch`). Workers are always torn down (:meth:`DPSync.close`, also on
error, timeout or Ctrl-C; each ends itself when its parent dies). Start-up has no fixed deadline: a
rank beats while it imports and brings up (:mod:`swafuzz.machinery`), and is given up only after
``--start-timeout`` seconds without progress; a step waits while the ranks live, up to that limit.
A rank that does not start, dies or does not answer is a :class:`DPSyncHarnessError` (the harness's
process group: exit 3, never a finding); a rank whose release code raises in a step is a
:class:`DPSyncError` naming rank and request. Imports no SGLang (the workers do). Releases 0.5.22
and 0.5.23; others are refused by :func:`check_release` (exit 2 at the CLI).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait

from swafuzz.features.dp import sglang_sync_rank
from swafuzz.features.dp.sglang_sync_draft import MUTANTS as DRAFT_MUTANTS
from swafuzz.machinery import BEAT_S, HarnessError, StartTimeout, StartWatch
from swafuzz.machinery import start_timeout as default_start_timeout
from swafuzz.targets.sglang.environ import environ

#: every probe of the release the workers change, with the reason (the component table's row)
PATCHED = (
    ("sglang.srt.distributed.bootstrap._bind_threads_if_cpu", "returns None: the CPU host's "
     "NUMA OpenMP binding asserts ranks <= NUMA nodes and would pin a shared machine's cores"),
    ("sglang.srt.model_executor.forward_batch_info._is_cpu", "True: a host without CUDA has "
     "no pinned-memory allocator (prepare_mlp_sync_batch pins its count tensor unless _is_cpu); "
     "its other use, the seq-len fill value, is answered as on CUDA (next row)"),
    ("DeepseekV4AttnBackend.get_cpu_graph_seq_len_fill_value (instance)", "answers the "
     "backend's CUDA fill value: with _is_cpu the padding asks the CPU graph's, the server "
     "studied runs on CUDA"),
    ("sglang.srt.layers.layer_boundary.adapters.attention._is_cuda", "True, only inside "
     "DPSync.scatter_guard: AttnTpContext.init_context allows input scattering on CUDA/NPU "
     "only"),
    ("AttnTpContext.allow_input_scattered", "True for one step of DPSync.step(force_scatter="
     "True): what init_context leaves for a model that permits scattering (DeepSeek-V2/V3 on "
     "CUDA); DeepSeek-V4 never does (DPSync.scatter_guard)"),
    ("DeepseekV4AttnBackend._build_forward_metadata (instance, DPSync.draft_block)",
     "dispatches a draft block to the release's init_forward_metadata_dspark_draft_block and "
     "any other mode to a metadata without a ring stamp (the prefill path on a ring pool); the "
     "release's init_forward_metadata and its in-graph ring restamp run around it"),
    ("DeepseekV4AttnBackend.init_forward_metadata_prefill (instance, DPSync.draft_block)",
     "answered by the ring stamp alone (the release's expand_prefill_casually with "
     "padded_num_tokens = out_cache_loc.shape[0], as the method starts, and "
     "_dspark_swa_ring_out_cache_loc): page tables, compression and FlashMLA metadata are CUDA"),
    ("DeepseekV4AttnBackend._move_to_device (instance, DPSync.draft_block)", "a plain host "
     "tensor: the release pins host memory, which a host without CUDA cannot"),
    ("draft pool translate_loc_from_full_to_swa (DPSync.draft_block)", "answers -1 for every "
     "row: the ring allocator never writes the mapping M, so a row the resolver translates is "
     "lost (the A4 symptom made visible)"),
    ("SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION (DPSync.draft_block(coordinate=True))",
     "set for that step's scheduler gather only, which then publishes the per-rank prefill "
     "flags the coordination plan reads: at bring-up the release refuses it without a "
     "speculative algorithm, and the workers' model stand-in has no DSpark draft"),
)

#: changes to the release's own padding rule a step may carry (``DPSync.step(mutant=)``): the
#: comparisons with the model and the reachability test must fail on each
RELEASE_MUTANTS = {
    "no_attn_tp_align": "spec §5.4 (1): prepare_mlp_sync_batch without ceil_align(num_tokens, "
                        "attn_tp_size)",
    "seq_lens_fill_0": "spec §5.4 (4): _pad_inputs_to_size pads seq_lens with 0 instead of "
                       "the backend's fill value (DeepSeek-V4: 1)",
    "pad_live_loc": "spec §9.5 (padded rows not steered to the dummy slot): _pad_inputs_to_size "
                    "pads out_cache_loc with the batch's first live location instead of 0 (the "
                    "server mutant server_pad_live_loc)",
}

#: the release's bring-up modules this hop needs (absent in 0.5.12; present in 0.5.18 .. 0.5.23,
#: where the ranked publish it calls is 0.5.21+: :func:`missing`)
NEEDS = ("sglang/srt/runtime_context.py", "sglang/srt/distributed/bootstrap.py",
         "sglang/srt/managers/scheduler_components/dp_attn.py")

MODES = ("decode", "extend", "idle")

#: the model config the workers' ServerArgs / ModelConfig read (no weights are loaded)
_MODEL = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 512,
          "rms_norm_eps": 1e-6, "torch_dtype": "bfloat16"}


class DPSyncError(RuntimeError):
    """A worker's release code failed or refused a request (the message names the rank)."""


class DPSyncHarnessError(HarnessError, DPSyncError):
    """A rank did not start, died, or did not answer: the process group, not the release."""


class DPSyncInputError(ValueError):
    """A bad :class:`RankInput` or :class:`ServerShape` (the message names the field)."""


@dataclass(frozen=True)
class RankInput:
    """One rank's batch: ``mode`` in MODES; per request its sequence length after the step
    (``seq_lens``) and, for an extend, the rows it adds (``extend_lens``); one full location
    per row (``out_cache_loc``). An idle rank has none of them."""

    mode: str
    seq_lens: tuple[int, ...] = ()
    extend_lens: tuple[int, ...] = ()
    out_cache_loc: tuple[int, ...] = ()

    def check(self, rank: int) -> None:
        where = f"rank {rank}"
        if self.mode not in MODES:
            raise DPSyncInputError(f"{where}: mode {self.mode!r} not one of {', '.join(MODES)}")
        if self.mode == "idle":
            if self.seq_lens or self.extend_lens or self.out_cache_loc:
                raise DPSyncInputError(f"{where}: an idle rank has no seq_lens, extend_lens "
                                       "or out_cache_loc")
            return
        if not self.seq_lens or any(s < 1 for s in self.seq_lens):
            raise DPSyncInputError(f"{where}: seq_lens needs at least one length >= 1")
        if self.mode == "decode":
            if self.extend_lens:
                raise DPSyncInputError(f"{where}: extend_lens is for mode extend only")
            rows = len(self.seq_lens)
        else:
            if len(self.extend_lens) != len(self.seq_lens) or any(
                    not 1 <= e <= s for e, s in zip(self.extend_lens, self.seq_lens)):
                raise DPSyncInputError(f"{where}: extend_lens needs one length per request, "
                                       "each 1..its seq_lens")
            rows = sum(self.extend_lens)
        if len(self.out_cache_loc) != rows or any(x < 1 for x in self.out_cache_loc):
            raise DPSyncInputError(f"{where}: out_cache_loc needs {rows} locations, each >= 1 "
                                   "(0 is the padding location)")


@dataclass(frozen=True)
class ServerShape:
    """The server arguments that shape the padding (ServerArgs field names); ``tp_size``
    processes are started. ``extra``: more ServerArgs fields, as given."""

    tp_size: int = 2
    dp_size: int = 1
    enable_dp_attention: bool = False
    moe_dense_tp_size: int | None = None
    enable_attn_tp_input_scattered: bool = False
    extra: dict = field(default_factory=dict)

    def server_args(self) -> dict:
        if self.tp_size not in (2, 4):
            raise DPSyncInputError(f"tp_size {self.tp_size}: 2 or 4 processes")
        if self.dp_size < 1 or self.tp_size % self.dp_size:
            raise DPSyncInputError(f"dp_size {self.dp_size}: a divisor of tp_size")
        d = asdict(self)
        d.pop("extra")
        if d["moe_dense_tp_size"] is None:
            d.pop("moe_dense_tp_size")
        d.update(self.extra)
        return d


def missing(site: str) -> list[str]:
    """What the release under ``site`` lacks of the bring-up this hop drives: the modules of
    :data:`NEEDS`, and the ranked ``publish`` (``runtime_context.SpawnRanks``, 0.5.21+: 0.5.18 ..
    0.5.20 have the modules but publish without ranks). Read from the files, nothing imported."""
    out = [n for n in NEEDS if not os.path.exists(os.path.join(site, n))]
    ctx = os.path.join(site, NEEDS[0])
    if not out and "class SpawnRanks" not in open(ctx, encoding="utf-8").read():
        out.append(f"{NEEDS[0]}: SpawnRanks (the ranked publish)")
    return out


def check_release(site: str) -> None:
    """Raise DPSyncError when the installed release lacks the bring-up this hop drives."""
    missing_ = missing(site)
    if missing_:
        raise DPSyncError("this SGLang release has no " + ", ".join(missing_) + ": the DP "
                          "padding hop drives 0.5.21+ (modelled on older releases)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DPSync:
    """``tp_size`` ranks of the release's parallel state; use as a context manager."""

    def __init__(self, shape: ServerShape = ServerShape(), *, start_timeout: float | None = None,
                 step_timeout: float | None = None, env: dict[str, str] | None = None):
        """``env``: the deployment's environment variables the ranks start with (the release
        reads some limits from ``SGLANG_*`` variables, e.g. the pplx dispatch budget).
        ``start_timeout``: seconds a rank's start-up may go without progress; ``step_timeout``:
        seconds a step may take while every rank lives (both default to ``--start-timeout``)."""
        import sglang
        check_release(os.path.dirname(os.path.dirname(sglang.__file__)))
        self.shape = shape
        self.env = dict(env or {})
        limit = default_start_timeout()
        self.start_timeout = limit if start_timeout is None else start_timeout
        self.step_timeout = limit if step_timeout is None else step_timeout
        # gloo's own limit: never shorter than the parent's wait (a rank that dies is seen first)
        self.server = dict(shape.server_args(),
                           dist_timeout=max(10, int(max(self.start_timeout, self.step_timeout))))
        self.procs: list = []
        self.conns: list = []
        self.facts: list[dict] = []
        self._dir = tempfile.mkdtemp(prefix="swafuzz-sglang-sync-")
        with open(os.path.join(self._dir, "config.json"), "w") as f:
            json.dump(_MODEL, f)

    def __enter__(self) -> DPSync:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        port = _free_port()
        with environ(self.env):  # a spawned rank starts with the parent's environment
            self._spawn(ctx, port)
        self.facts = self._collect("start-up", self.start_timeout, start=True)

    def _spawn(self, ctx, port: int) -> None:
        for rank in range(self.shape.tp_size):
            a, b = ctx.Pipe()
            p = ctx.Process(target=sglang_sync_rank.main, daemon=True,
                            args=(rank, port, self.server, self._dir, b, os.getpid()))
            p.start()
            b.close()
            self.procs.append(p)
            self.conns.append(a)

    def _collect(self, what: str, timeout: float, start: bool = False) -> list:
        """Every rank's answer to ``what``. ``start``: the ranks beat while they start and
        each is given up after ``timeout`` s without progress; else ``timeout`` s in all. A
        rank that dies, does not answer, or fails its start-up: :class:`DPSyncHarnessError`
        (the workers stopped); a rank that fails a request: :class:`DPSyncError`."""
        out: list = [None] * len(self.conns)
        pending = dict(enumerate(self.conns))
        # one watch for the group: a rank waiting in the rendezvous for a slower peer makes no
        # progress of its own while the peer does
        watch = StartWatch("", timeout)
        marks: dict[int, object] = {}
        t0 = time.monotonic()
        try:
            while pending:
                ready = wait(list(pending.values()), timeout=min(4 * BEAT_S, timeout))
                for r, c in list(pending.items()):
                    if c not in ready:
                        if not start and time.monotonic() - t0 > timeout:
                            raise DPSyncHarnessError(f"rank {r} did not answer {what} within "
                                                     f"{timeout:g} s (--start-timeout; workers "
                                                     "stopped)")
                        continue
                    try:
                        status, value = c.recv()
                    except (EOFError, OSError) as e:
                        raise DPSyncHarnessError(f"rank {r} died during {what} ({e!r})") from e
                    if status == "starting":
                        marks[r] = value
                        continue
                    if status != "ok":
                        err = DPSyncHarnessError if start else DPSyncError
                        raise err(f"rank {r} failed {what}:\n{value[-3000:]}")
                    out[r] = value
                    del pending[r]
                if start and pending:  # progress: a rank's mark moved, or a rank answered
                    watch.what = (f"process-group rank(s) {', '.join(map(str, pending))} of "
                                  f"{len(self.conns)} (the DP padding hop's SGLang ranks)")
                    watch.beat(repr((sorted(marks.items()), sorted(pending))))
        except (DPSyncError, StartTimeout):
            self.close()
            raise
        return out

    def _ask(self, what: str, payloads: list) -> list:
        if not self.conns:
            raise DPSyncHarnessError("DPSync is not running (closed or never started)")
        for c, p in zip(self.conns, payloads):
            c.send(p)
        return self._collect(what, self.step_timeout)

    def _check_call(self, ranks: list, mutant: str | None, mutants) -> None:
        if mutant is not None and mutant not in mutants:
            raise DPSyncInputError(f"mutant {mutant!r} not one of {', '.join(mutants)}")
        if len(ranks) != self.shape.tp_size:
            raise DPSyncInputError(f"ranks: {len(ranks)} inputs for {self.shape.tp_size} ranks")

    def step(self, ranks: list[RankInput], force_scatter: bool = False,
             mutant: str | None = None, cuda_graph: bool = False) -> list[dict]:
        """Every rank's batch through the release's padding; per rank the result of
        ``sglang_sync_batch.run_rank`` (``force_scatter``: see PATCHED; ``mutant``: one of
        RELEASE_MUTANTS, for this step only; ``cuda_graph``: the ranks vote for the CUDA
        graphs, as with them on)."""
        self._check_call(ranks, mutant, RELEASE_MUTANTS)
        for i, r in enumerate(ranks):
            r.check(i)
        opts = {"force_scatter": force_scatter, "mutant": mutant, "cuda_graph": cuda_graph}
        return self._ask("a step", [("step", asdict(r), opts) for r in ranks])

    def draft_block(self, ranks: list[RankInput], qtn: int, mutant: str | None = None,
                    coordinate: bool = False, moe_draft: bool = True,
                    force_scatter: bool = False) -> list[dict]:
        """Every decode rank's DSpark draft block (``seq_lens`` the prefix lengths, ``qtn``
        locations per request; extend and idle ranks only gather) through the release's eager
        model-runner order; per rank the record of ``sglang_sync_draft.run_draft_block``
        (``coordinate``: a coordinated step; ``moe_draft``: False for a dense draft;
        ``force_scatter``: see PATCHED; ``mutant``: None or one of its MUTANTS)."""
        self._check_call(ranks, mutant, DRAFT_MUTANTS)
        for i, r in enumerate(ranks):
            if r.mode == "decode" and len(r.out_cache_loc) != qtn * len(r.seq_lens):
                raise DPSyncInputError(f"rank {i}: a draft block's decode rank has {qtn} "
                                       "locations per request")
            if r.mode != "decode":
                r.check(i)
        opts = {"qtn": qtn, "mutant": mutant, "coordinate": coordinate, "moe_draft": moe_draft,
                "force_scatter": force_scatter}
        return self._ask("a draft block", [("draft_block", asdict(r), opts) for r in ranks])

    def scatter_guard(self, model_is_dsa: bool) -> list[dict]:
        """Per rank: would the release scatter an extend's input over the TP ranks for a model
        whose attention context says ``is_dsa`` (DeepSeek-V4: True)."""
        return self._ask("scatter_guard", [("scatter_guard", model_is_dsa)] * len(self.conns))

    def close(self) -> None:
        """Stop the workers (ask, then terminate, then kill) and remove the model dir."""
        for c in self.conns:
            try:
                c.send(("stop",))
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(2)
            if p.is_alive():
                p.terminate()
                p.join(3)
            if p.is_alive():
                p.kill()
                p.join(3)
        for c in self.conns:
            c.close()
        self.procs, self.conns = [], []
        shutil.rmtree(self._dir, ignore_errors=True)
