"""Executors on CPU: the tape's CUDA-graph semantics, the eager executor, the registry.

The ``scenario_*`` functions are device- and executor-agnostic and return plain Python values;
``test_cudagraph.py`` runs them under the real ``cudagraph`` executor and ``test_fidelity.py``
compares tape and cudagraph on the GPU. Expected values come from plain-Python oracles over lists
of ints and bytes. CPU time: about 3 s (Triton tests included when ``kernels.triton_impl``
imports).
"""

from __future__ import annotations

import os
import random
import struct

import pytest
import torch
import torch.nn.functional as F

from swafuzz.harness.executors import (
    EXECUTOR_NAMES,
    EagerExecutor,
    TapeExecutor,
    available_executors,
    get_executor,
)
from swafuzz.harness.executors.tape_record import HostSyncInCapture, TapeReplayError, poison_value
from swafuzz.kernels.launch import launch

try:
    from swafuzz.kernels.contracts import ContractError
except ImportError:  # kernels/ not written yet: any ValueError will do for the fake launches
    ContractError = ValueError

P = 4  # page size; page 0 is the dummy page
PAGES = 8
SLOTS = P * PAGES
S_FULL = 40
D = 8  # bytes per row
N = 6  # rows per forward
REPLAYS = 20
POISON_I32 = -0x5A5A5A5B


# ---------------------------------------------------------------------------------------------
# a toy engine: static buffers, a mapping, a plain-Python shadow
# ---------------------------------------------------------------------------------------------


class World:
    """Static buffers of a toy forward on ``device``.

    mapping: int64 ``[S_FULL + 1]`` full slot -> SWA slot (unique, outside page 0) or -1;
    loc: int64 ``[N]`` (static input); rows: uint8 ``[N, D]`` (static input); out_loc: int32
    ``[N]`` (static output); cache: uint8 ``[PAGES, P, D]`` (the pool), cache_rows its
    ``[SLOTS, D]`` view.
    """

    def __init__(self, device: str, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.device = device
        swa = self.rng.sample(range(P, SLOTS), SLOTS - P)
        full = self.rng.sample(range(S_FULL), len(swa))
        self.mapping_list = [-1] * (S_FULL + 1)
        for f, s in zip(full, swa):
            self.mapping_list[f] = s
        self.mapped = sorted(full)
        self.mapping = torch.tensor(self.mapping_list, dtype=torch.int64, device=device)
        self.loc = torch.zeros(N, dtype=torch.int64, device=device)
        self.rows = torch.zeros(N, D, dtype=torch.uint8, device=device)
        self.out_loc = torch.zeros(N, dtype=torch.int32, device=device)
        self.cache = torch.zeros(PAGES, P, D, dtype=torch.uint8, device=device)
        self.cache_rows = self.cache.view(SLOTS, D)
        self.shadow = [bytes(D)] * SLOTS
        self.validate_calls = 0
        self.loc_list: list[int] = []
        self.rows_list: list[bytes] = []

    def new_batch(self, differ_from: list[int] | None = None) -> None:
        """Copy a fresh batch (distinct mapped full slots, random rows) into the static inputs."""
        while True:
            locs = self.rng.sample(self.mapped, N)
            if locs != differ_from:
                break
        rows = [bytes(self.rng.randrange(256) for _ in range(D)) for _ in range(N)]
        self.loc.copy_(torch.tensor(locs, dtype=torch.int64))
        self.rows.copy_(torch.tensor([list(r) for r in rows], dtype=torch.uint8))
        self.loc_list, self.rows_list = locs, rows

    # oracle (plain Python)
    def expected_loc_bytes(self, locs: list[int] | None = None) -> bytes:
        locs = self.loc_list if locs is None else locs
        return struct.pack(f"<{len(locs)}i", *(self.mapping_list[x] for x in locs))

    def apply_shadow_store(self) -> None:
        for x, row in zip(self.loc_list, self.rows_list):
            self.shadow[self.mapping_list[x]] = row

    def shadow_bytes(self) -> bytes:
        return b"".join(self.shadow)

    # a fake non-aten kernel, launched through kernels.launch
    def validator(self):
        def validate() -> None:
            self.validate_calls += 1
            idx = self.out_loc
            if bool(((idx < 0) | (idx >= SLOTS)).any()):
                raise ContractError(f"fake.store: loc must lie in [0, {SLOTS}) (got {idx.tolist()})")

        return validate

    def launch_store(self, src: torch.Tensor | None = None) -> None:
        launch("fake.store", _fake_store, (self.cache_rows, self.out_loc,
                                           self.rows if src is None else src), self.validator())


def _fake_store(dst: torch.Tensor, idx: torch.Tensor, src: torch.Tensor) -> None:
    dst.index_copy_(0, idx.long(), src)


def raw(t: torch.Tensor) -> bytes:
    """The bytes of ``t`` (any device, contiguous copy)."""
    return t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()


# ---------------------------------------------------------------------------------------------
# scenarios (shared with test_cudagraph.py and test_fidelity.py)
# ---------------------------------------------------------------------------------------------


def forward_ops(w: World, pad: int = 2, holder: dict | None = None):
    """A forward made of the ops the engine uses: index, .to(int32), pad, zeros, index_put_,
    slice, copy_, and a launch through ``kernels.launch``."""
    holder = {} if holder is None else holder

    def fn() -> None:
        swa = w.mapping[w.loc].to(torch.int32)
        padded = F.pad(swa, (0, pad), value=-1)
        staged = torch.zeros(N + pad, dtype=torch.int32, device=w.device)
        staged.index_put_((torch.arange(N + pad, device=w.device),), padded)
        w.out_loc.copy_(staged[:N])
        w.launch_store()
        holder.update(swa=swa, padded=padded, staged=staged)

    return fn


def scenario_fresh(ex, device: str, replays: int = REPLAYS, seed: int = 0) -> dict:
    """Capture once, then replay on new contents of the static inputs each time."""
    w = World(device, seed)
    w.new_batch()
    fn = forward_ops(w)
    handle = ex.capture(fn)
    outs, caches, exp_outs, exp_caches = [], [], [], []
    w.shadow = [bytes(b) for b in _chunks(raw(w.cache), D)]  # the state capture left
    for _ in range(replays):
        w.new_batch()
        ex.replay(handle)
        w.apply_shadow_store()
        outs.append(raw(w.out_loc))
        caches.append(raw(w.cache))
        exp_outs.append(w.expected_loc_bytes())
        exp_caches.append(w.shadow_bytes())
    return {"outs": outs, "caches": caches, "exp_outs": exp_outs, "exp_caches": exp_caches}


def _chunks(b: bytes, n: int) -> list[bytes]:
    return [b[i:i + n] for i in range(0, len(b), n)]


def scenario_stale(ex, device: str, replays: int = REPLAYS, seed: int = 1) -> dict:
    """A host-memoized translation (computed with .tolist() at warm-up, before capture) next to
    an in-graph one; count the replays whose result is stale."""
    w = World(device, seed)
    w.new_batch()
    first = list(w.loc_list)
    memo: dict = {}
    baked_out = torch.zeros(N, dtype=torch.int32, device=device)

    def fn() -> None:
        if "t" not in memo:  # host memo: filled at warm-up, reused at capture
            host = [w.mapping_list[x] for x in w.loc.tolist()]
            memo["t"] = torch.tensor(host, dtype=torch.int32, device=device)
        baked_out.copy_(memo["t"])
        w.out_loc.copy_(w.mapping[w.loc].to(torch.int32))

    handle = ex.capture(fn)
    stale_baked = stale_in_graph = 0
    results = []
    for _ in range(replays):
        w.new_batch(differ_from=first)
        ex.replay(handle)
        want = w.expected_loc_bytes()
        stale_baked += raw(baked_out) != want
        stale_in_graph += raw(w.out_loc) != want
        results.append((raw(baked_out), raw(w.out_loc)))
    return {"stale_baked": stale_baked, "stale_in_graph": stale_in_graph, "results": results,
            "baked_value": w.expected_loc_bytes(first)}


def scenario_restore(ex, device: str, replays: int = 2) -> dict:
    """Pre-existing tensors written during capture (fill_ through a view, a launch) keep their
    pre-capture bytes; replays write what the host computed at capture."""
    w = World(device, 2)
    w.new_batch()
    calls = [0]

    def fn() -> None:
        calls[0] += 1
        w.cache_rows[0].fill_(calls[0])  # dummy slot 0, written through a select view
        w.out_loc.copy_(w.mapping[w.loc].to(torch.int32))
        w.launch_store(torch.full((N, D), calls[0], dtype=torch.uint8, device=device))

    handle = ex.capture(fn)
    after_capture = raw(w.cache)
    values = []
    for _ in range(replays):
        ex.replay(handle)
        slot = w.mapping_list[w.loc_list[0]]
        values.append((int(w.cache_rows[0, 0]), int(w.cache_rows[slot, 0])))
    return {"after_capture": after_capture, "values": values, "calls": calls[0], "world": w}


def scenario_two_graphs(ex, device: str, replays: int = 6) -> dict:
    """Two forwards captured by one executor (one shared pool), replayed in alternating order."""
    worlds = [World(device, 10), World(device, 11)]
    handles = []
    for w in worlds:
        w.new_batch()
        handles.append(ex.capture(forward_ops(w)))
    got, want = [], []
    for i in range(replays):
        w, h = worlds[(i * 7 // 3) % 2], handles[(i * 7 // 3) % 2]
        w.new_batch()
        ex.replay(h)
        got.append(raw(w.out_loc))
        want.append(w.expected_loc_bytes())
    return {"got": got, "want": want}


def scenario_triton(ex, device: str, replays: int = 5, seed: int = 3) -> dict:
    """The real Triton translate / store / translate_store captured and replayed."""
    from swafuzz.kernels import triton_impl

    w = World(device, seed)
    w.new_batch()
    fused_out = torch.zeros(N, dtype=torch.int32, device=device)
    cache2 = torch.zeros(PAGES, P, D, dtype=torch.uint8, device=device)

    def fn() -> None:
        t = triton_impl.translate(w.mapping, w.loc)
        triton_impl.store(w.cache, t, w.rows)
        w.out_loc.copy_(t)
        triton_impl.translate_store(w.mapping, w.loc, w.rows, cache2, out=fused_out)

    handle = ex.capture(fn)
    w.shadow = [bytes(b) for b in _chunks(raw(w.cache), D)]
    got, want = [], []
    for _ in range(replays):
        w.new_batch()
        ex.replay(handle)
        w.apply_shadow_store()
        got.append((raw(w.out_loc), raw(fused_out), raw(w.cache), raw(cache2)))
        want.append((w.expected_loc_bytes(), w.expected_loc_bytes(), w.shadow_bytes(),
                     w.shadow_bytes()))
    return {"got": got, "want": want, "world": w, "handle": handle}


def _triton_or_skip():
    try:
        import swafuzz.kernels.triton_impl  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "not available here"
        pytest.skip(f"kernels.triton_impl does not import here ({type(e).__name__}: {e})")


def triton_device(interpret: str | None, cuda: bool) -> str | None:
    """Where the Triton kernels of these tests can run: the interpreter takes CPU tensors;
    compiled Triton (``TRITON_INTERPRET`` unset or 0) needs CUDA tensors; None: nowhere here."""
    if interpret == "1":
        return "cpu"
    return "cuda" if cuda else None


def _triton_device_or_skip() -> str:
    _triton_or_skip()
    dev = triton_device(os.environ.get("TRITON_INTERPRET"), torch.cuda.is_available())
    if dev is None:
        pytest.skip("compiled Triton needs a CUDA device (TRITON_INTERPRET is not 1, no GPU)")
    return dev


@pytest.mark.parametrize("interpret,cuda,want", [
    ("1", False, "cpu"),  # CPU CI
    (None, True, "cuda"),  # the GPU machine: compiled Triton on CUDA tensors
    ("0", True, "cuda"),
    ("1", True, "cpu"),  # interpreter forced on a GPU machine
    ("0", False, None),  # the issue-10 reproduction: skip, not "tensors must be on CUDA"
])
def test_triton_device_selection(interpret, cuda, want):
    assert triton_device(interpret, cuda) == want


# ---------------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------------


def test_registry_names_and_errors():
    assert get_executor("eager").name == "eager" and not get_executor("eager").graphs
    tape = get_executor("tape", device="cpu")
    assert tape.name == "tape" and tape.graphs and tape.device == torch.device("cpu")
    assert set(available_executors()) <= set(EXECUTOR_NAMES)
    auto = get_executor("auto")
    assert auto.name == ("cudagraph" if torch.cuda.is_available() else "tape")
    with pytest.raises(ValueError, match="'eager', 'tape', 'cudagraph', 'auto'"):
        get_executor("graph")
    if not torch.cuda.is_available():
        assert "cudagraph" not in available_executors()
        with pytest.raises(RuntimeError, match="needs a CUDA device"):
            get_executor("cudagraph")


# ---------------------------------------------------------------------------------------------
# tape
# ---------------------------------------------------------------------------------------------


def test_tape_replay_rereads_static_buffers_bit_exact():
    r = scenario_fresh(TapeExecutor("cpu"), "cpu")
    assert r["outs"] == r["exp_outs"]
    assert r["caches"] == r["exp_caches"]


def test_tape_two_captures_replayed_in_any_order():
    r = scenario_two_graphs(TapeExecutor("cpu"), "cpu")
    assert r["got"] == r["want"]


def test_tape_records_device_work_only():
    w = World("cpu")
    w.new_batch()
    tape = TapeExecutor("cpu").capture(forward_ops(w))
    names = tape.op_names
    assert "aten.index.Tensor" in names and "aten._to_copy.default" in names
    assert "aten.constant_pad_nd.default" in names and "aten.index_put_.default" in names
    assert names[-1] == "launch:fake.store"
    assert not any("slice" in n or "view" in n or "lift_fresh" in n for n in names), names


def test_host_baked_translation_stays_stale_in_graph_one_fresh():
    r = scenario_stale(TapeExecutor("cpu"), "cpu")
    assert r["stale_baked"] == REPLAYS
    assert r["stale_in_graph"] == 0
    assert all(b == r["baked_value"] for b, _ in r["results"])


_TORCH_TENSOR = torch.tensor
SYNCS = {
    "item": lambda x: x.sum().item(),
    "tolist": lambda x: x.tolist(),
    "numpy": lambda x: x.numpy(),
    "nonzero": lambda x: torch.nonzero(x),
    "bool": lambda x: bool(x[0] > 0),
    "int": lambda x: int(x[0]),
    "equal": lambda x: torch.equal(x, x),
    "masked_select": lambda x: torch.masked_select(x, x > 1),
    "bool_mask_index": lambda x: x[x > 1],
    "bool_mask_put": lambda x: x.__setitem__(x > 1, 0),
    "unique": lambda x: torch.unique(x),
    "cpu": lambda x: x.cpu(),  # a device->host copy (a no-op on CPU, refused all the same)
    "tensor_from_list": lambda x: torch.tensor([1, 2], device=x.device),  # host->device upload
    "as_tensor_from_list": lambda x: torch.as_tensor([3], device=x.device),
}


@pytest.mark.parametrize("op", sorted(SYNCS))
def test_host_sync_in_capture_raises_and_capture_is_undone(op):
    x = torch.arange(4)
    after_warmup = torch.arange(4).add_(1)
    SYNCS[op](after_warmup)

    def fn() -> None:
        x.add_(1)  # written before the sync: must be restored when capture fails
        SYNCS[op](x)

    with pytest.raises(HostSyncInCapture, match="operation not permitted when stream is capturing"):
        TapeExecutor("cpu").capture(fn)
    assert raw(x) == raw(after_warmup)  # warm-up ran for real; capture's writes were undone
    assert "tolist" not in torch.Tensor.__dict__ and "numpy" not in torch.Tensor.__dict__
    assert "cpu" not in torch.Tensor.__dict__ and torch.tensor is _TORCH_TENSOR


def test_host_sync_outside_capture_is_fine():
    x = torch.arange(4)
    ex = TapeExecutor("cpu")
    h = ex.capture(lambda: x.add_(1))
    assert x.tolist() == [1, 2, 3, 4] and x.numpy().tolist() == [1, 2, 3, 4]
    ex.replay(h)
    assert x.tolist() == [2, 3, 4, 5]


def test_outputs_produced_during_capture_are_poisoned():
    w = World("cpu")
    w.new_batch()
    holder: dict = {}
    pre = torch.arange(10, dtype=torch.int64)
    pre_bytes = raw(pre)

    def fn() -> None:
        forward_ops(w, holder=holder)()
        holder["f"] = w.mapping[w.loc].to(torch.float32) * 0.5
        holder["u8"] = w.rows + 1
        holder["alias"] = pre.view(2, 5).reshape(10)  # a view of a pre-existing tensor
        holder["copy"] = pre.view(2, 5).t().reshape(10)  # clone + _unsafe_view: new storage
        holder["empty"] = torch.empty(3, dtype=torch.int32)

    ex = TapeExecutor("cpu")
    tape = ex.capture(fn)
    assert holder["swa"].tolist() == [POISON_I32] * N
    assert holder["staged"].tolist() == [POISON_I32] * (N + 2)
    assert torch.isnan(holder["f"]).all()
    assert holder["u8"].flatten().tolist() == [0x5A] * (N * D)
    assert holder["copy"].tolist() == [POISON_I32] * 10  # int64 too
    assert holder["empty"].tolist() == [POISON_I32] * 3
    assert raw(pre) == pre_bytes and raw(holder["alias"]) == pre_bytes  # never poisoned
    ex.replay(tape)
    assert raw(holder["swa"]) == w.expected_loc_bytes()
    assert holder["f"].tolist() == [w.mapping_list[x] * 0.5 for x in w.loc_list]
    assert holder["copy"].tolist() == [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
    assert holder["empty"].tolist() == [POISON_I32] * 3  # allocation only: nothing writes it
    assert poison_value(torch.bool) is True and poison_value(torch.int8) == -0x5B


def test_preexisting_tensors_written_in_capture_are_restored():
    r = scenario_restore(TapeExecutor("cpu"), "cpu")
    w = r["world"]
    slot = w.mapping_list[w.loc_list[0]]
    # warm-up wrote 1 everywhere it writes; capture wrote 2, which was undone
    cache = torch.frombuffer(bytearray(r["after_capture"]), dtype=torch.uint8).view(SLOTS, D)
    assert cache[0].tolist() == [1] * D and cache[slot].tolist() == [1] * D
    assert r["values"] == [(2, 2), (2, 2)]  # the host value baked at capture, every replay


def test_validate_runs_on_replay_not_in_capture():
    w = World("cpu")
    w.new_batch()
    ex = TapeExecutor("cpu")
    tape = ex.capture(forward_ops(w))
    assert w.validate_calls == 1  # the warm-up's launch, outside capture
    ex.replay(tape)
    assert w.validate_calls == 2
    before = raw(w.cache)
    bad = w.mapped[0]
    w.mapping[bad] = SLOTS + 3  # translation now points past the cache
    w.loc[0] = bad
    with pytest.raises(ContractError, match="fake.store: loc must lie in"):
        ex.replay(tape)
    assert raw(w.cache) == before  # refused before the launch ran


def test_replay_detects_resized_static_buffer():
    m = torch.arange(10, dtype=torch.int64)
    idx = torch.tensor([1, 2, 3])
    out: dict = {}
    ex = TapeExecutor("cpu")
    tape = ex.capture(lambda: out.update(g=m[idx]))
    idx.resize_(4)
    idx.copy_(torch.tensor([0, 1, 2, 3]))
    with pytest.raises(TapeReplayError, match=r"aten.index.Tensor: output 0 is torch.int64\[4\]"):
        ex.replay(tape)


def test_replay_rejects_foreign_handle():
    with pytest.raises(TypeError, match="TapeExecutor.capture"):
        TapeExecutor("cpu").replay(lambda: None)


def test_triton_kernels_under_tape():
    dev = _triton_device_or_skip()
    r = scenario_triton(TapeExecutor(dev), dev)
    assert r["got"] == r["want"]
    names = r["handle"].op_names
    assert [n for n in names if n.startswith("launch:")] == [
        "launch:triton.translate", "launch:triton.store", "launch:triton.translate_store"]
    assert not any("view" in n for n in names), names  # interpreter internals not recorded


def test_triton_bad_index_on_replay_is_a_contract_error():
    dev = _triton_device_or_skip()
    from swafuzz.kernels.contracts import ContractError as RealContractError

    r = scenario_triton(TapeExecutor(dev), dev, replays=1)
    w = r["world"]
    w.loc[0] = 10**6
    with pytest.raises(RealContractError, match="outside the mapping"):
        TapeExecutor(dev).replay(r["handle"])


# ---------------------------------------------------------------------------------------------
# eager
# ---------------------------------------------------------------------------------------------


def test_eager_reruns_host_code():
    ex = EagerExecutor("cpu")
    r = scenario_restore(ex, "cpu", replays=3)
    assert r["values"] == [(2, 2), (3, 3), (4, 4)]  # host counter advances every replay
    x = torch.arange(3)
    seen = []
    h = ex.capture(lambda: seen.append(x.sum().item()))  # host syncs are fine eagerly
    x.add_(1)
    ex.replay(h)
    assert seen == [3, 6]


def test_eager_fresh_and_stale_semantics():
    r = scenario_fresh(EagerExecutor("cpu"), "cpu", replays=3)
    assert r["outs"] == r["exp_outs"] and r["caches"] == r["exp_caches"]
    s = scenario_stale(EagerExecutor("cpu"), "cpu", replays=3)
    assert s["stale_baked"] == 3 and s["stale_in_graph"] == 0  # a host memo is stale eagerly too
