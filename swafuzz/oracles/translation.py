"""Translation oracle: full slot ids -> SWA slot ids, in plain Python (spec §2.1-2.2).

``M`` has length ``S_full + P + 1``: ``M[f] > 0`` the SWA slot of ``f``, ``0`` unmapped (writes
go to dummy slot 0), last element the sentinel ``-1``. Translating is a gather with torch's
advanced-indexing rules, which upstream relies on: ``l`` in ``[0, len(M))`` gives ``M[l]``; ``l``
in ``[-len(M), 0)`` wraps once (``-1`` the sentinel by design, ``-2`` ``M[len(M) - 2]``, an
aliasing hazard); anything else is :class:`TranslationError`; the int32 cast never wraps.

Never imports torch, ``kernels`` or ``targets``.
"""

from __future__ import annotations

from typing import Sequence

SENTINEL = -1
UNMAPPED = 0
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


class TranslationError(ValueError):
    """An input outside the translation rules; the message names the argument and the rule."""


def make_mapping(size_full: int, page_size: int) -> list[int]:
    """A fresh mapping: ``size_full + page_size`` zeros (all unmapped) and the ``-1`` sentinel."""
    if size_full < 0 or page_size < 1:
        raise TranslationError(
            f"make_mapping: size_full must be >= 0 and page_size >= 1 (got {size_full}, "
            f"{page_size})"
        )
    return [UNMAPPED] * (size_full + page_size) + [SENTINEL]


def int32(value: int, what: str = "value") -> int:
    """The explicit int32 cast rule: ``value`` unchanged if it fits, else TranslationError."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise TranslationError(f"{what} = {value} does not fit int32 (ids must be below 2^31)")
    return value


def translate_one(mapping: Sequence[int], loc: int) -> int:
    """``int32(mapping[loc])`` with the wrap rule for negative ``loc``."""
    m = len(mapping)
    if not -m <= loc < m:
        raise TranslationError(
            f"translate: loc = {loc} is outside the mapping: full locations must lie in "
            f"[-{m}, {m}) (len(mapping) = {m})"
        )
    idx = loc + m if loc < 0 else loc
    return int32(mapping[idx], f"mapping[{idx}]")


def translate(mapping: Sequence[int], loc: Sequence[int]) -> list[int]:
    """``[int32(mapping[l]) for l in loc]`` with the wrap rule (see the module docstring)."""
    return [translate_one(mapping, int(x)) for x in loc]
