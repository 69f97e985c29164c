"""The request window's server-level oracle (plain Python, no SGLang): what it predicts for a
forward's stores, history and ring, and that each of its checks fails on the observation the
release's bugs and the server mutants leave (the pipeline's side: test_server_window.py)."""

from __future__ import annotations

from swafuzz.features.request_window.server_oracle import ServerWindowOracle
from swafuzz.scenarios.payload import k_rows_bytes
from swafuzz.server.case import ModelShape, Request, ServerCase, ServerConfig
from swafuzz.server.observation import ForwardRec
from swafuzz.server.timeline import forwards

W, RB, ZERO = 2, 16, 8  # window / capacity, row bytes, the zero row (slots 0..3, then it)
CASE = ServerCase(config=ServerConfig(enable_encoder_swa_bounded_replay=True),
                  model=ModelShape(layers=1, sliding_window=W, full_tokens=32, swa_tokens=32),
                  requests=(Request(prompt_len=3, max_new_tokens=2),))


def _row(fwd: int, k: int, n: int) -> bytes:
    return k_rows_bytes("rows", 0, fwd, 0, "target", 0, n, RB)[k * RB:(k + 1) * RB]


def _ring(rows: dict[int, tuple[int, bytes]]) -> tuple[list[int], bytes]:
    tags, data = [-1] * (ZERO + 1), bytearray(b"\x5a" * RB * (ZERO + 1))
    data[ZERO * RB:] = bytes(RB)
    for r, (tag, row) in rows.items():
        tags[r] = tag
        data[r * RB:(r + 1) * RB] = row
    return tags, bytes(data)


def _rec(index, slot, hist, ring_rows, stores):
    tags, data = _ring(ring_rows)
    return ForwardRec(index=index, mode="", stores=[stores], window={
        "slots": [slot], "capacity": W, "zero_row": ZERO, "history_tags": [hist],
        "ring_tags": [tags], "bytes_after": [data]})


def _good():
    """The forwards of CASE as a correct release leaves them: EXTEND of positions 0..2 in slot
    1 (positions 1, 2 commit), then DECODE of position 3 (history positions 1, 2)."""
    ext, dec = forwards(CASE)
    r_ext = _rec(0, 1, [-1, -1], {2: (2, _row(0, 2, 3)), 3: (1, _row(0, 1, 3))}, [2, 3, 4])
    r_dec = _rec(1, 1, [1, 2], {2: (2, _row(0, 2, 3)), 3: (3, _row(1, 0, 1))}, [2])
    return (ext, r_ext), (dec, r_dec)


def test_a_correct_window_passes_and_the_stores_are_workspace_rows():
    o = ServerWindowOracle(CASE)
    for fwd, rec in _good():
        assert o.stores(fwd, len(rec.stores[0])) == rec.stores
        assert o.forward(fwd, rec, len(rec.stores[0])) == []


def test_a_padding_row_committed_over_position_0_fails_the_ring():
    """Ledger ``window-dp-extend-pad-joins-run``: a 1-token EXTEND padded to 2 rows whose
    padding row (position 0) joins the run and commits last."""
    case = ServerCase(config=CASE.config, model=CASE.model,
                      requests=(Request(prompt_len=1, max_new_tokens=1),))
    fwd = forwards(case)[0]
    rec = _rec(0, 1, [-1, -1], {2: (0, _row(0, 1, 2))}, [2, 3])
    o = ServerWindowOracle(case)
    assert o.stores(fwd, 2) == [[2, 3]]
    (check, msg), = o.forward(fwd, rec, 2)
    assert check == "window_ring" and "position 0" in msg


def test_history_tags_and_slots_are_checked():
    (ext, r_ext), (dec, r_dec) = _good()
    o = ServerWindowOracle(CASE)
    assert o.forward(ext, r_ext, 3) == []
    r_dec.window["history_tags"] = [[-1, 2]]  # mutant server_layout_floor_own_row's reading
    assert [c for c, _ in o.forward(dec, r_dec, 1)] == ["window_history"]
    o = ServerWindowOracle(CASE)
    o.forward(ext, r_ext, 3)
    r_dec.window["slots"] = [2]  # the request moved slot
    assert [c for c, _ in o.forward(dec, r_dec, 1)] == ["window_slots"]


def test_a_reused_slot_must_be_reset():
    """A request leaving, another taking its slot: the ring rows it has not written are -1
    (mutant server_slot_reset_next leaves the last owner's tags)."""
    (ext, r_ext), _ = _good()
    o = ServerWindowOracle(CASE)
    o.forward(ext, r_ext, 3)
    o.release(0)
    case = ServerCase(config=CASE.config, model=CASE.model,
                      requests=(Request(prompt_len=1, max_new_tokens=1),))
    fwd = forwards(case)[0]
    stale = _rec(0, 1, [-1, -1], {2: (0, _row(0, 0, 1)), 3: (1, _row(0, 1, 3))}, [2])
    (check, msg), = o.forward(fwd, stale, 1)
    assert check == "window_ring" and "row 3" in msg
    o = ServerWindowOracle(CASE)
    o.forward(ext, r_ext, 3)
    o.release(0)
    assert o.forward(fwd, _rec(0, 1, [-1, -1], {2: (0, _row(0, 0, 1)), 3: (-1, _row(0, 1, 3))},
                               [2]), 1) == []
