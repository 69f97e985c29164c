"""The decode side of prefill/decode disaggregation at server level (the ``sglang`` part's
slot ``server_takeover``; imports SGLang): a Case with ``disaggregation_mode`` "decode" runs
every request as a prompt prefilled by another server and taken over here, through the
release's decode-side code (0.5.23 ``disaggregation/decode.py``):

* an arriving request (its prompt and the prefill's first output token, bootstrapped to the
  release's fake host) joins the release's ``DecodePreallocQueue`` through its ``add`` (the
  release's ``FakeKVReceiver``, ``init``);
* each step the queue's ``pop_preallocated`` admits what its budgets allow (FIFO; the
  admission is observed, the oracle follows it) and pre-allocates each admitted request
  (``_pre_alloc`` -> ``alloc_for_decode_prealloc`` -> ``alloc_extend_swa_tail`` with the head's
  mapping reset at page > 1), then sends the receiver its metadata (full pages and the SWA
  window's pages, ``translate_swa_indices_for_transfer``);
* the transfer (modelled: a transfer engine or a second server is not run) writes the
  prefill's KV of the window positions into the SWA pages the release sent, as the prefill's
  sender would; the receiver's ``poll`` (the release's fake: Success once metadata was sent)
  completes it; the first output token is the one the metadata buffer carries (modelled);
* the transferred requests become a PREBUILT batch (the release's ``ScheduleBatch.init_new``,
  ``prepare_for_prebuilt``, ``process_prebuilt`` into a relay that records the stash),
  merged into the running batch;
* every running request then decodes through the base pipeline (``prepare_for_decode``,
  ``alloc_decode``, SWA eviction, the stub model's stores), finished ones leave through
  ``release_kv_cache``; after each DECODE the KV each request reads in its window is taken
  from the pool through the release's mapping and request row (``ServerObs.takeover``).

Modelled besides: a one-rank all-reduce of the receivers' polls (the identity, as the
release's own single-rank path); the queue is built without its constructor (it builds a
transfer backend's KV manager); the scheduler stand-in holds what the queue reads.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from swafuzz.machinery import HarnessError
from swafuzz.scenarios.payload import rows_bytes
from swafuzz.server.case import MAX_STEPS
from swafuzz.server.observation import ServerObs
from swafuzz.server.timeline import Forward, Release
from swafuzz.targets.sglang.environ import set_attr
from swafuzz.targets.sglang.pipeline import seams
from swafuzz.targets.sglang.pipeline.steps import OutOfScope, make_req, output_id
from swafuzz.targets.sglang.real import TARGET_VERSION

from sglang.srt.disaggregation import decode as dd  # isort: skip
from sglang.srt.disaggregation import utils as du  # isort: skip
from sglang.srt.disaggregation.base.conn import KVPoll  # isort: skip
from sglang.srt.managers.schedule_batch import FINISH_LENGTH, ScheduleBatch  # isort: skip


class Relay:
    """The overlap relay ``process_prebuilt`` stashes each request's last token into
    (``FutureMap.stash``; modelled: the first decode's input ids are handed as every decode's)."""

    def __init__(self):
        self.stashed: list = []

    def stash(self, idx, payload) -> None:
        self.stashed.append(idx)


def prealloc_queue(pipe):
    """The release's ``DecodePreallocQueue`` without its constructor, over the pipeline's
    allocator, request table and tree cache; its scheduler a stand-in of what it reads."""
    srv, case = pipe.srv, pipe.case
    q = object.__new__(dd.DecodePreallocQueue)
    q.req_to_token_pool = srv.req_to_token_pool
    q.token_to_kv_pool_allocator = srv.allocator
    q.token_to_kv_pool = srv.engine.target_pool.real
    q.draft_token_to_kv_pool = None
    q.is_mla_backend = False
    q.metadata_buffers = None
    q.req_to_metadata_buffer_idx_allocator = du.ReqToMetadataIdxAllocator(
        len(case.requests) + 1)
    q.tree_cache = srv.tree_cache
    q.host_pool, q.host_reserved_tokens = None, 0
    q.gloo_group = None
    q._num_published_destinations = 0
    q.tp_rank, q.gpu_id, q.pp_rank, q.pp_size = 0, 0, 0, 1
    q.max_total_num_tokens = case.model.full_tokens
    q.num_reserved_decode_tokens = case.config.num_reserved_decode_tokens
    q.transfer_backend = dd.TransferBackend.FAKE
    q.queue, q.retracted_queue, q.pending_reqs, q.held_rebootstrap_reqs = [], [], [], []
    q._prefill_dp_rank_queries, q._ensure_retry_count, q._ensure_last_attempt_time = {}, {}, {}
    q.enable_staging = False
    q.kv_manager = SimpleNamespace(kv_args=SimpleNamespace(state_types=[dd.StateType.SWA]),
                                   prefill_info_table={})
    q.transfer_queue = SimpleNamespace(queue=[], enable_staging=False)
    q.kv_checksum_signature = 0
    q.scheduler = SimpleNamespace(
        sliding_window_size=case.model.sliding_window, enable_hisparse=False,
        enable_lora=False, enable_priority_scheduling=False, enable_decode_hicache=False,
        server_args=srv.server_args, last_batch=None, waiting_queue=[],
        running_batch=SimpleNamespace(reqs=[]),
        output_streamer=SimpleNamespace(stream_output=lambda reqs, logprob: None),
        tp_worker=SimpleNamespace(is_hybrid_swa=True, model_runner=SimpleNamespace(
            swa_max_total_num_tokens=case.model.swa_tokens)),
        metrics_reporter=SimpleNamespace(enable_metrics=False))
    return q


def transferred_row(case, rid: int, layer: int, pos: int) -> bytes:
    """The KV row the prefill server computed for request ``rid``'s prompt position ``pos``
    at ``layer`` (the Case's payload, pool "prefill")."""
    rb = case.model.row_bytes
    return rows_bytes(case.payload_seed, rid, 0, "prefill", layer, pos + 1, rb)[pos * rb:]


def takeover_pipeline(base):
    """The server-level pipeline class ``base`` as the decode side of PD (module docstring)."""

    class TakeoverPipeline(base):
        def start(self):
            self.obs = ServerObs(target_version=TARGET_VERSION)
            self.obs.free = {"before": self.free_tokens()}
            self.obs.takeover = {"taken": {}, "records": {}, "reads": {}}
            self.q = prealloc_queue(self)
            self.q._pre_alloc = self.pre_alloc(self.q._pre_alloc)
            self.sent: dict[int, tuple] = {}
            self.relay = Relay()
            self.done_rids: set[int] = set()
            self.n_fwd = 0
            return None

        # -- arrivals and the takeover ---------------------------------------------------------
        def arrive(self, t: int) -> None:
            for rid, r in enumerate(self.case.requests):
                if r.arrive_step != t:
                    continue
                req = self.reqs[rid] = make_req(self.case, rid)
                req.bootstrap_host = du.FAKE_BOOTSTRAP_HOST
                req.bootstrap_room = rid
                req.output_ids = seams.token_ids([output_id(rid, 0)])  # the prefill's first
                self.q.add(req)
                if not self.q.queue or self.q.queue[-1].req is not req:
                    raise OutOfScope(f"request {rid}: the release's add did not queue it")
                sent_to(self.q.queue[-1], self.sent)

        def take_over(self, t: int) -> list[int]:
            """The release's pop_preallocated, the modelled transfer, the receivers' poll and
            the PREBUILT batch merged into the running batch; the taken-over requests."""
            q = self.q
            q.scheduler.running_batch = self.running or SimpleNamespace(reqs=[])
            with set_attr(du, "_all_reduce_polls", lambda polls, group: polls):
                got, failed = q.pop_preallocated()
            if failed:
                raise OutOfScope(f"step {t}: pre-allocation failed for "
                                 f"{[int(d.req.rid) for d in failed]}")
            rids = [int(d.req.rid) for d in got]
            for dr in got:
                rid = int(dr.req.rid)
                rec = self.obs.takeover["records"][rid]
                rec["kv_pages"], rec["swa_pages"] = self.sent[rid]
                self.transfer(rid, self.sent[rid])
                if dr.kv_receiver.poll() != KVPoll.Success:
                    raise RuntimeError(f"request {rid}: the receiver did not complete")
            self.tap.take()  # the pre-allocation's tokens are the records', not a forward's
            if not got:
                return []
            self.obs.takeover["taken"][t] = rids
            self.prebuilt([d.req for d in got])
            return rids

        def pre_alloc(self, real):
            """The queue's ``_pre_alloc`` tapped: per request the free tokens and its slots'
            mapping before, its slots, row and mapping after (the takeover's record)."""
            def call(req, *args, **kwargs):
                a, table = self.srv.allocator, self.srv.req_to_token_pool.req_to_token
                before, snapshot = self.free_tokens(), a.full_to_swa_index_mapping.clone()
                out = real(req, *args, **kwargs)
                loc = out.to(torch.int64)
                idx = int(req.kv.req_pool_idx)
                m = a.full_to_swa_index_mapping
                self.obs.takeover["records"][int(req.rid)] = {
                    "req_pool_idx": idx, "loc": loc.tolist(),
                    "row": table[idx, :loc.numel()].tolist(),
                    "mapping_before": snapshot[loc].tolist(), "mapping": m[loc].tolist(),
                    "free_before": before, "free_after": self.free_tokens()}
                return out
            return call

        def transfer(self, rid: int, sent) -> None:
            """Modelled: the prefill's sender writes its window KV into the SWA pages the
            release sent (positions from the prefill's window start, page-aligned), per layer."""
            case, P = self.case, self.case.config.page_size
            L, W = case.requests[rid].prompt_len, case.model.sliding_window
            start = max(0, L - W) // P * P
            pool = self.srv.engine.target_pool
            for layer in range(pool.num_layers):
                cache = pool.caches[layer]
                for pos in range(start, L):
                    j = pos - start
                    if j // P >= len(sent[1]):
                        break
                    page = int(sent[1][j // P])
                    if not 0 <= page < cache.shape[0]:
                        raise RuntimeError(f"request {rid}: the release sent SWA page {page} "
                                           f"for position {pos}, outside the SWA pool's "
                                           f"{cache.shape[0]} pages")
                    row = torch.frombuffer(bytearray(transferred_row(case, rid, layer, pos)),
                                           dtype=torch.uint8).view(cache.dtype)
                    cache[page, pos % P] = row

        def prebuilt(self, reqs) -> None:
            s = self.srv
            for req in reqs:
                req.init_next_round_input(s.tree_cache)
                if req.kv.kv_committed_len is not None:
                    req.extend_end = req.kv.kv_committed_len
            b = ScheduleBatch.init_new(reqs, s.req_to_token_pool, s.allocator, s.tree_cache,
                                       s.model_runner.model_config, False, self.spec_algorithm)
            b.prepare_for_prebuilt()
            b.process_prebuilt(self.relay)
            b.filter_batch()
            if self.running is None or self.running.is_empty():
                self.running = b
            else:
                self.running.merge_batch(b)

        # -- leaving, decoding, reading --------------------------------------------------------
        def leave_finished(self, t: int) -> None:
            out = [rid for rid, req in self.reqs.items() if rid not in self.done_rids
                   and self.case.requests[rid].abort_step == t]
            if out:
                raise OutOfScope(f"step {t}: aborts are not driven on the decode side")
            done = tuple(sorted(rid for rid, req in self.reqs.items()
                                if len(req.output_ids) >= self.case.requests[rid].max_new_tokens
                                and self.in_running(rid)))
            if done:
                self.release(Release(t, done, ()))
                self.done_rids |= set(done)
                self.obs.release_free[t] = self.free_tokens()

        def in_running(self, rid: int) -> bool:
            return self.running is not None and any(int(r.rid) == rid for r in self.running.reqs)

        def release(self, ev) -> None:
            for rid in ev.rids:
                req = self.reqs.pop(rid)
                req.finished_reason = FINISH_LENGTH(len(req.output_ids))
                seams.release(req, self.srv.tree_cache)
            self.running.filter_batch()

        def step_decode(self, t: int) -> None:
            b = self.running
            if b is None or b.is_empty():
                return
            if not b.check_decode_mem():
                raise OutOfScope(f"step {t}: the decode capacity gate refused (retraction on "
                                 "the decode side is not driven)")
            rids = tuple(int(r.rid) for r in b.reqs)
            spans = tuple((len(self.reqs[r].origin_input_ids) + len(self.reqs[r].output_ids)
                           - 1, 1) for r in rids)
            fwd = Forward(t, self.n_fwd, "DECODE", rids, spans)
            self.n_fwd += 1
            batch = self.decode()
            self.obs.forwards.append(self.forward(fwd, batch))
            self.obs.takeover["reads"][fwd.index] = self.reads(fwd)
            self.after_forward(fwd, batch)

        def reads(self, fwd) -> dict:
            """Per request of the DECODE, per window position, per layer: the bytes at the SWA
            slot its request row's full slot maps to (what the window's attention reads)."""
            s, W = self.srv, self.case.model.sliding_window
            pool, rb = s.engine.target_pool, self.case.model.row_bytes
            layers = [pool.layer_bytes(k) for k in range(pool.num_layers)]
            m = s.allocator.full_to_swa_index_mapping
            out = {}
            for rid, (pos, _n) in zip(fwd.rids, fwd.spans):
                idx = int(self.reqs[rid].kv.req_pool_idx)
                lo = max(0, pos + 1 - W)
                full = s.req_to_token_pool.req_to_token[idx, lo:pos + 1].to(torch.int64)
                slots = m[full].tolist()
                out[rid] = [[data[sl * rb:(sl + 1) * rb].hex() for data in layers]
                            for sl in slots]
            return out

        def run(self) -> ServerObs:
            self.start()
            try:
                for t in range(MAX_STEPS + MAX_STEPS):
                    if len(self.done_rids) == len(self.case.requests):
                        break
                    self.leave_finished(t)
                    self.arrive(t)
                    self.take_over(t)
                    self.step_decode(t)
                else:
                    raise OutOfScope("the requests did not all finish within the steps")
            except (HarnessError, MemoryError):  # the harness's machinery: exit 3, no finding
                raise
            except Exception as e:  # noqa: BLE001 - the observation records any failure
                self.failed(e)
            return self.finish()

    return TakeoverPipeline


def sent_to(dr, sent: dict) -> None:
    """Tap the request's receiver: what the release's ``send_metadata`` hands it (full page
    indices, SWA window page indices)."""
    rid, recv = int(dr.req.rid), dr.kv_receiver
    real = recv.send_metadata

    def send_metadata(kv_indices, aux_index=None, state_indices=None, **kw):
        swa = state_indices[0] if state_indices else []
        sent[rid] = ([int(x) for x in kv_indices], [int(x) for x in swa])
        return real(kv_indices, aux_index, state_indices, **kw)

    recv.send_metadata = send_metadata


def run(case, impl: str, executor, pipeline_cls) -> ServerObs:
    """A decode-side Case through ``pipeline_cls`` (the ``sglang`` part's slot
    ``server_takeover``)."""
    return takeover_pipeline(pipeline_cls)(case, impl, executor).run()
