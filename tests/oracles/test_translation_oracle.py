"""Tests of the plain-Python oracles ``oracles.translation`` and ``oracles.store``.

What is tested
    Translation: the sentinel and wrap rules of spec sections 2.1-2.2 (``-1`` -> ``-1``, other
    negative locations wrap once by ``len(mapping)``, unmapped entries give 0), the explicit
    int32 cast rule (a value outside int32 raises, never wraps) and out-of-range locations.
    Shadow store: slot addressing with page padding, last-write semantics across launches, the
    dummy page 0 excluded from comparison, duplicate/negative/out-of-range writes refused.

How it is verified
    Hand-written examples whose answers follow directly from the spec text, plus a hypothesis
    property checking ``translate`` against a second, independently written formulation (list
    rotation instead of index arithmetic). The oracles never import torch; these tests do not
    either.

How to reproduce
    ``HYPOTHESIS_PROFILE=ci /tmp/venv/bin/pytest tests/oracles/test_translation_oracle.py -q``

How to extend
    Add an example per new rule; keep the oracle free of torch. CPU time: < 1 s.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swafuzz.oracles.store import ShadowStore, StoreContractError, shadow_store
from swafuzz.oracles.translation import (
    SENTINEL,
    TranslationError,
    int32,
    make_mapping,
    translate,
    translate_one,
)

# ---------------------------------------------------------------------------------------------
# translation
# ---------------------------------------------------------------------------------------------


def test_make_mapping_layout():
    m = make_mapping(size_full=8, page_size=4)
    assert len(m) == 8 + 4 + 1
    assert m[:-1] == [0] * 12 and m[-1] == SENTINEL


def test_sentinel_wrap_and_unmapped():
    m = [0, 4, 5, 0, 7, -1]
    assert translate(m, [-1]) == [-1]  # the designed sentinel
    assert translate(m, [-2]) == [7]  # aliasing: wraps to the highest real full slot
    assert translate(m, [-6]) == [0]  # -len(mapping) wraps to element 0
    assert translate(m, [0, 3]) == [0, 0]  # unmapped -> dummy slot 0
    assert translate(m, [1, 2, 4, 5]) == [4, 5, 7, -1]
    assert translate(m, []) == []


@pytest.mark.parametrize("loc", [6, 7, -7, 10**12])
def test_out_of_range_location_raises(loc):
    with pytest.raises(TranslationError, match=r"loc = .* is outside the mapping"):
        translate([0, 4, 5, 0, 7, -1], [loc])


def test_int32_cast_rule():
    assert int32(2**31 - 1) == 2**31 - 1
    assert int32(-(2**31)) == -(2**31)
    for bad in (2**31, -(2**31) - 1, 2**40):
        with pytest.raises(TranslationError, match="does not fit int32"):
            int32(bad)
    with pytest.raises(TranslationError, match=r"mapping\[1\] = 2147483648 does not fit int32"):
        translate_one([0, 2**31, -1], 1)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=40), st.data())
def test_translate_equals_rotation_formulation(mapping, data):
    m = len(mapping)
    locs = data.draw(st.lists(st.integers(-m, m - 1), max_size=40))
    doubled = list(mapping) + list(mapping)  # index l + m for any l in [-m, m)
    assert translate(mapping, locs) == [doubled[loc + m] for loc in locs]


# ---------------------------------------------------------------------------------------------
# shadow store
# ---------------------------------------------------------------------------------------------


def test_shadow_store_addressing_with_page_padding():
    # P=2, 3-byte rows, 3 pages, page stride 8 bytes (2 bytes of padding per page).
    s = ShadowStore(2, 3, 3, initial=bytes(range(24)), page_stride_bytes=8)
    assert [s.offset(x) for x in range(6)] == [0, 3, 8, 11, 16, 19]
    s.store([(3, b"abc"), (4, b"xyz")])
    buf = bytearray(range(24))
    buf[11:14] = b"abc"
    buf[16:19] = b"xyz"
    assert s.expected_buffer() == bytes(buf)
    assert s.expected_slots() == {2: bytes([8, 9, 10]), 3: b"abc", 4: b"xyz",
                                  5: bytes([19, 20, 21])}
    assert s.mismatches(bytes(buf)) == []
    buf[22] ^= 1  # padding after page 2's rows
    buf[12] ^= 1  # slot 3
    assert s.mismatches(bytes(buf)) == [("slot", 3), ("page_padding", 2)]


def test_shadow_store_dummy_page_is_excluded_and_last_launch_wins():
    s = ShadowStore(4, 1, 2)
    s.store([(0, b"a"), (0, b"b"), (3, b"c"), (5, b"d")])
    s.store([(5, b"e")])  # a later launch may overwrite
    actual = bytearray(8)
    actual[0:4] = b"zzzz"  # page 0: any bytes accepted
    actual[5] = ord("e")
    assert s.mismatches(bytes(actual)) == []
    assert s.dummy_written
    assert shadow_store(4, 1, 2, None, [(5, b"d")]) == {4: b"\0", 5: b"d", 6: b"\0", 7: b"\0"}


@pytest.mark.parametrize("writes,pattern", [
    ([(4, b"a"), (4, b"b")], r"loc\[0\] and loc\[1\] both write slot 4"),
    ([(-1, b"a")], r"loc\[0\] = -1: no negative write location"),
    ([(8, b"a")], r"loc\[0\] = 8 is outside the buffer"),
    ([(4, b"ab")], r"rows\[0\] must hold row_bytes = 1 bytes"),
])
def test_shadow_store_refuses_contract_violations(writes, pattern):
    s = ShadowStore(4, 1, 2)
    with pytest.raises(StoreContractError, match=pattern):
        s.store(writes)
    assert s.expected_buffer() == bytes(8)  # checked before anything is applied


def test_shadow_store_rejects_bad_geometry():
    with pytest.raises(StoreContractError, match="page_size must be a power of two"):
        ShadowStore(3, 1, 1)
    with pytest.raises(StoreContractError, match="page_stride_bytes must be >="):
        ShadowStore(2, 4, 1, page_stride_bytes=7)
    with pytest.raises(StoreContractError, match="initial must hold"):
        ShadowStore(2, 4, 1, initial=b"x")
