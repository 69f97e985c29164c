"""``swafuzz export`` of a request-window finding on a padded eager EXTEND (hook
``export.sglang_test``): a server Case with ``enable_encoder_swa_bounded_replay`` whose release
run padded an eager EXTEND past its rows (the MLP sync: attention TP > 1, or a decode rank that
MAX_LEN relabelled). The exported test drives sglang's own eager metadata chain
(``DeepseekV4AttnBackend.init_forward_metadata_prefill`` -> ``expand_prefill_casually`` ->
``make_core_attn_metadata`` -> ``window_layout``, CPU branches) on the padded batch the release
built, and asserts the layout the window oracle (:func:`.oracle_layout.padded_layout`, plain
Python over the Case's rows) predicts at the release's geometry (window and ring capacity 128):
the commit mask (padding rows commit nowhere), the workspace rows and every valid history row.
The Case's rows, slots and padding come from the plan (``server.timeline``) and the bundle's
observed batch (the release's own padding and request slots: inputs, not judged here)."""

from __future__ import annotations

from swafuzz.features.dp.server_oracle import rank_case
from swafuzz.features.export_recipe import Fix, Recipe, Row, literal
from swafuzz.features.request_window.oracle_layout import padded_layout
from swafuzz.server.timeline import forwards

#: the release's window (``window_layout``'s default) and ring capacity (the sliding window,
#: no MTP): the test runs the release's geometry, not the Case's scaled one
W = CAP = 128
_BACKEND = "sglang.srt.layers.attention.deepseek_v4_backend"
_WINDOW = "sglang.srt.mem_cache.dsv41_request_window"
FUNCTIONS = (
    "sglang.srt.managers.scheduler_components.dp_attn:SchedulerDPAttnAdapter.prepare_mlp_sync_batch",
    "sglang.srt.model_executor.model_runner:ModelRunner._prepare_eager_forward_batch",
    "sglang.srt.model_executor.forward_batch_info:ForwardBatch.prepare_mlp_sync_batch",
    "sglang.srt.model_executor.forward_batch_info:ForwardBatch._pad_inputs_to_size",
    f"{_BACKEND}:DeepseekV4AttnBackend.init_forward_metadata",
    f"{_BACKEND}:DeepseekV4AttnBackend.init_forward_metadata_prefill",
    f"{_BACKEND}:DeepseekV4AttnBackend.expand_prefill_casually",
    f"{_BACKEND}:DeepseekV4AttnBackend.make_core_attn_metadata",
    f"{_WINDOW}:window_layout",
    f"{_WINDOW}:RequestWindow.commit",
)
CULPRIT = f"{_BACKEND}:DeepseekV4AttnBackend.init_forward_metadata_prefill"
FIX = Fix(_BACKEND, "DeepseekV4AttnBackend.init_forward_metadata_prefill",
          "request_window_live_rows=num_tokens if graph_window else None,",
          "request_window_live_rows=(num_tokens if self.token_to_kv_pool.request_window is "
          "not None else None),",
          "pass the live rows to window_layout on the eager path too (as the prefill graph "
          "does): padding rows then write the workspace past the live rows and commit nowhere")


def _padded(case, bundle):
    """``(rank, index, plan forward, observed forward)`` of the first eager EXTEND the release
    padded past the plan's rows, at or before the first failing forward; None if none."""
    obs = bundle.get("observed") or {}
    per_rank = obs.get("ranks") or [obs]
    last = min((f.get("forward") for f in bundle.get("failures") or ()
                if isinstance(f.get("forward"), int)), default=None)
    for rank, ro in enumerate(per_rank):
        plan = found_plan(case, bundle, rank)
        for fo in ro.get("forwards") or ():
            i = fo.get("index")
            if (fo.get("mode") != "EXTEND" or fo.get("exec") != "eager" or i is None
                    or i >= len(plan) or (last is not None and i > last)):
                continue
            if len(fo.get("positions") or ()) > plan[i].rows and fo.get("window"):
                return rank, i, plan[i], fo
    return None


def recipe(case, bundle) -> Recipe | None:
    if not (case.config.enable_encoder_swa_bounded_replay
            and str(bundle.get("signature", "")).startswith("server:window")):
        return None
    found = _padded(case, bundle)
    if found is None:
        return None
    rank, index, fwd, fo = found
    slots = [int(s) for s in fo["window"]["slots"]]
    rows = [(slot, start + k, 0) for slot, (start, n) in zip(slots, fwd.spans) for k in range(n)]
    n, total = len(rows), len(fo["positions"])
    pad = total - n
    seq = [start + cnt for start, cnt in fwd.spans]
    ext = [cnt for _, cnt in fwd.spans]
    num_slots = max(slots) + 1
    zero_row = num_slots * CAP
    lay = padded_layout(rows, pad, len(slots), W, CAP, zero_row)
    history = [(i, lay.history_pos[i], lay.history_src[i])
               for i in range(len(lay.history_valid)) if lay.history_valid[i]]
    loc = [int(a[0]) for a in fo.get("alloc") or ()]
    out_loc = loc[:n] + [0] * pad
    req_to_token = _locations(found_plan(case, bundle, rank), _rank_obs(bundle, rank), index)
    table = _table(case, bundle, rank, fwd, fo, slots, lay, history, n, pad)
    src = _TEST.format(
        rank=rank, index=index, mode=fwd.mode, slots=literal(slots), seq=literal(seq),
        ext=literal(ext), out_loc=literal(out_loc), n=n, num_slots=num_slots, cap=CAP, w=W,
        zero_row=zero_row, req_to_token=literal(req_to_token),
        commit=literal(lay.commit), write_loc=literal(lay.write_loc), history=literal(history),
        max_seq=max(seq))
    return Recipe(
        title="Eager EXTEND padded by the MLP sync under a request window: the padding rows "
              "join the last request's run in window_layout (commit and history)",
        where=(f"attention-DP rank {rank}, " if (bundle.get("observed") or {}).get("ranks")
               else "") + f"forward {index} (planned {fwd.mode}, run as an eager EXTEND of {n} "
              f"rows padded to {total} by the MLP sync; attention TP "
              f"{_attn_tp(case.config)})",
        functions=FUNCTIONS, culprit=CULPRIT, rows=table,
        test_name="test_request_window_eager_padding.py", test_source=src, fix=FIX,
        notes=("Model: encoder / decoder SWA bounded replay need a DeepSeek-V4.1 checkpoint.",
               "Expected values: swafuzz's window oracle (features/request_window/oracle_layout."
               "padded_layout) over the Case's rows at window 128 / capacity 128, hard-coded.",
               "Inputs from the release's run (bundle 'observed'): request slots, locations, "
               "the padded row count."))


def _table(case, bundle, rank, fwd, fo, slots, lay, history, n, pad) -> tuple[Row, ...]:
    """Expected (the test's numbers, release geometry) vs observed (the bundle's run, the Case's
    window ``capc``: the tags its ring and history rows held after / during the forward)."""
    win = fo["window"]
    capc = int(win["capacity"])
    ring = (win.get("ring_tags") or [[]])[0]
    hist = (win.get("history_tags") or [[]])[0]
    rows, i = [], 0
    for rid, slot, (start, cnt) in zip(fwd.rids, slots, fwd.spans):
        for p in range(start, start + cnt):
            r = slot * capc + p % capc
            seen = (f"in the run (window {capc}): ring row {r} tagged {ring[r]} (expected "
                    f"{p}); its bytes: the failures below" if start + cnt - p <= capc
                    and r < len(ring) else "-")
            rows.append(Row(rank, _rid(case, rank, rid, bundle), p, i, slot,
                            f"commits ring row {slot * CAP + p % CAP} (position {p})", seen))
            i += 1
    for j in range(pad):
        rows.append(Row(rank, None, int(fo["positions"][n + j]), n + j, None,
                        f"padding row: commits nowhere, writes workspace row "
                        f"{lay.write_loc[n + j]}", "-"))
    for h, p, src in history:
        g = h // W
        start = fwd.spans[g][0]
        k = g * capc + p - (start - capc)
        seen = (f"in the run (window {capc}): history row {k} tagged {hist[k]} (expected {p})"
                if start - capc <= p < start and 0 <= k < len(hist) else "-")
        rows.append(Row(rank, _rid(case, rank, fwd.rids[g], bundle), p, None, slots[g],
                        f"history row {h} (group {g}) holds position {p} (ring row {src})",
                        seen))
    return tuple(rows)


def _attn_tp(cfg) -> int:
    """Attention TP: ``tp_size``, divided by ``dp_size`` under DP attention."""
    return cfg.tp_size // cfg.dp_size if cfg.enable_dp_attention else cfg.tp_size


def _rank_obs(bundle, rank):
    obs = bundle.get("observed") or {}
    return (obs.get("ranks") or [obs])[rank]


def found_plan(case, bundle, rank):
    return forwards(rank_case(case, rank) if (bundle.get("observed") or {}).get("ranks")
                    else case)


def _locations(plan, ro, upto: int) -> dict[int, list[int]]:
    """Per request slot, the full locations of positions 0..n-1 the release allocated in forwards
    ``0..upto`` (``alloc``: per real row, its full location first), in the plan's rows."""
    by_slot: dict[int, dict[int, int]] = {}
    for fo in ro.get("forwards") or ():
        i = fo.get("index")
        if i is None or i > upto or i >= len(plan) or not fo.get("window"):
            continue
        locs = iter(int(a[0]) for a in fo.get("alloc") or ())
        for slot, (start, cnt) in zip(fo["window"]["slots"], plan[i].spans):
            for p in range(start, start + cnt):
                by_slot.setdefault(int(slot), {})[p] = next(locs, 0)
    return {s: [m.get(p, 0) for p in range(max(m) + 1)] for s, m in sorted(by_slot.items())}


def _rid(case, rank, rid, bundle):
    """The Case's request id of the rank's ``rid`` (a rank's plan numbers its own requests)."""
    if not (bundle.get("observed") or {}).get("ranks"):
        return rid
    ids = [i for i, r in enumerate(case.requests) if r.rank == rank]
    return ids[rid]


_TEST = '''"""Request window (encoder SWA bounded replay): an eager EXTEND that the MLP sync padded.

Generated by `swafuzz export` (do not edit by hand). Standalone: imports sglang only; CPU.
Found on attention-DP rank {rank}, forward {index} (planned {mode}): the padded batch below is the
one the release built. The expected values are hard-coded from swafuzz's independent window
oracle at the release's geometry (window {w}, ring capacity {cap}): every real query row is in
its request's run, padding rows write the workspace past the live rows and commit nowhere, and
each request's history holds its earlier positions.
"""

import unittest
from types import SimpleNamespace
from unittest import mock

import torch
from sglang.srt.layers.attention import deepseek_v4_backend as backend_mod
from sglang.srt.layers.attention.deepseek_v4_backend import DeepseekV4AttnBackend

# the batch after the MLP sync: real rows first, then the padding rows (location 0)
REQ_POOL_INDICES = {slots}
SEQ_LENS = {seq}
EXTEND_SEQ_LENS = {ext}
OUT_CACHE_LOC = {out_loc}
NUM_TOKENS = {n}  # real rows
REQ_TO_TOKEN = {req_to_token}  # slot -> locations of positions 0..seq_len-1
NUM_SLOTS = {num_slots}
CAPACITY = {cap}
ZERO_ROW = {zero_row}  # the ring's zero row (NUM_SLOTS * CAPACITY)

# expected (swafuzz window oracle)
EXPECTED_COMMIT_MASK = {commit}
EXPECTED_WRITE_LOC = {write_loc}
EXPECTED_VALID_HISTORY = {history}  # (history row, position, source ring row)


def _backend():
    """The DSV4 attention backend without its CUDA constructor: the attributes the eager
    prefill metadata reads, with a request window of NUM_SLOTS slots."""
    b = object.__new__(DeepseekV4AttnBackend)
    b.token_to_kv_pool = SimpleNamespace(
        request_window=SimpleNamespace(zero_row=ZERO_ROW, capacity=CAPACITY))
    b.req_to_token = torch.zeros(NUM_SLOTS, {max_seq} + 1, dtype=torch.int32)
    for slot, locs in REQ_TO_TOKEN.items():
        b.req_to_token[slot, : len(locs)] = torch.tensor(locs, dtype=torch.int32)
    b.page_size = 1
    b.encoder_replay = False  # no prefix hit: nothing replayed, no row floor
    b.encoder_row_floor = None
    b.low_ratios, b.present_ratios = (), ()
    b.cuda_int32_kwargs = {{"dtype": torch.int32, "device": "cpu"}}
    b.index_topk = 512
    b.has_c4 = b.has_c128 = False
    b.trtllm_attn = False
    return b


class TestRequestWindowEagerPadding(unittest.TestCase):
    def _layout(self):
        ext = torch.tensor(EXTEND_SEQ_LENS, dtype=torch.int32)
        # FlashMLA's scheduling metadata needs CUDA; the window layout does not read it
        with mock.patch.object(backend_mod, "_create_flashmla_metadata", return_value=None):
            md = _backend().init_forward_metadata_prefill(
                max_seq_len=max(SEQ_LENS),
                req_pool_indices=torch.tensor(REQ_POOL_INDICES),
                seq_lens=torch.tensor(SEQ_LENS, dtype=torch.int32),
                seq_lens_cpu=SEQ_LENS,
                out_cache_loc=torch.tensor(OUT_CACHE_LOC),
                num_tokens=NUM_TOKENS,
                extend_seq_lens=ext,
                extend_seq_lens_cpu=EXTEND_SEQ_LENS,
                extend_start_loc=torch.cumsum(ext, 0) - ext,
                need_compress=False,
            )
        return md.core_attn_metadata.request_window_layout

    def test_padding_rows_commit_nowhere(self):
        lay = self._layout()
        self.assertEqual(lay.commit_mask.tolist(), EXPECTED_COMMIT_MASK)

    def test_workspace_rows(self):
        self.assertEqual(self._layout().write_loc.tolist(), EXPECTED_WRITE_LOC)

    def test_history_holds_the_earlier_positions(self):
        lay = self._layout()
        valid = [
            (i, int(lay.history_pos[i]), int(lay.history_src[i]))
            for i in range(lay.history_valid.numel())
            if bool(lay.history_valid[i])
        ]
        self.assertEqual(valid, EXPECTED_VALID_HISTORY)


if __name__ == "__main__":
    unittest.main()
'''
