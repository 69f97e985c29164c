"""Per-release answers of the ``sglang`` target's real/modelled table, for the releases between
the two the :data:`~swafuzz.targets.sglang.TABLE` columns name (0.5.12, 0.5.23).

Reads no sglang: the answers are what :mod:`~swafuzz.targets.sglang.features` finds in each
release, recorded from the wheels (release-matrix branch; verified releases are the
``VERIFIED`` tuple, other releases inside a range are inferred from its two ends and still
feature-detected at run time). A TABLE row not listed here has the same answer in every
release of the range as in its 0.5.23 column (0.5.13+) - or, for rows whose 0.5.12 and 0.5.23
answers agree, everywhere.

    python -m swafuzz.targets.sglang.matrix 0.5.16 0.5.21   # the table's column per release

:func:`table_text` is the whole table as ``swafuzz list --target sglang`` prints it.
"""

from __future__ import annotations

import sys
import textwrap

import swafuzz.targets.sglang as sg
from swafuzz.features.sglang_facts import facts
from swafuzz.targets.sglang import SUPPORTED_RANGE, TABLE, in_range, version_key

#: TABLE component (its leading words, as ``str.startswith``; the longest key a component starts
#: with answers) -> ``(first, last, answer, why)`` for the releases ``first .. last``
#: (inclusive) whose answer differs from the 0.5.23 column (0.5.12 keeps its own column): the
#: core's cross-feature rows here, each feature's in its folder (``sglang_facts.py``)
CORE_RANGES: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "allocator (alloc": (
        ("0.5.13", "0.5.22", "real",
         "no use_triton_kernels switch: alloc_extend_kernel routed to the module's "
         "alloc_extend_naive, decodes through alloc_extend (as 0.5.12); free_full from 0.5.20 "
         "(before: free = full side then free_swa)"),),
    "DSV4 pool: layer-keyed cached_loc": (),
    "resolver get_swa_out_cache_loc": (
        ("0.5.13", "0.5.20", "real", "C and F only (addendum §3)"),
        ("0.5.21", "0.5.22", "real",
         "W, T, C, F: W tested before any IDLE test, no I, no J (addendum §3, A2)"),),
    "in-graph stamp": (
        ("0.5.13", "0.5.20", "real", "stamps the translation unconditionally (no window test, no per-request row test)"),
        ("0.5.21", "0.5.22", "real", "translation skipped under a window only"),),
}
RANGES: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    **CORE_RANGES, **{k: r for f in facts() for k, r in f.ranges.items()}}


def answer(component: str, version: str) -> tuple[str, str]:
    """``(answer, why)`` of the TABLE row ``component`` for release ``version`` (in range)."""
    if not in_range(version):
        raise ValueError(f"sglang {version} is outside the supported range "
                         f"{SUPPORTED_RANGE[0]} .. {SUPPORTED_RANGE[1]}")
    row = next(r for r in TABLE if r[0] == component)
    k = version_key(version)
    if k < version_key("0.5.13"):
        return row[1], ""
    keys = [key for key in RANGES if component.startswith(key)]
    for first, last, ans, why in RANGES[max(keys, key=len)] if keys else ():
        if version_key(first) <= k <= version_key(last):
            return ans, why
    return row[2], ""


def release_table(version: str, width: int = 100) -> str:
    """The TABLE's column for one release, with the per-release reason where it differs."""
    w0 = max(len(r[0]) for r in TABLE)
    lines = [f"{'component':<{w0}}  sglang {version}", "-" * (w0 + 20)]
    for comp, *_ in TABLE:
        ans, why = answer(comp, version)
        lines.append(f"{comp:<{w0}}  {ans}")
        if why:
            lines += textwrap.wrap(why, width, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


def table_text(width: int = 100) -> str:
    """The real/modelled/why table as plain text (``why`` wrapped under each row), and the
    installed release's column when it lies strictly inside the range."""
    w0 = max(len(r[0]) for r in TABLE)
    lines = [f"{'component':<{w0}}  0.5.12    0.5.23", "-" * (w0 + 20)]
    for c, a, b, why in TABLE:
        lines.append(f"{c:<{w0}}  {a:<8}  {b}")
        lines += textwrap.wrap(why, width, initial_indent="    ", subsequent_indent="    ")
    v = sg.installed_version()
    if v is not None and in_range(v) and version_key(v) not in (version_key(SUPPORTED_RANGE[0]),
                                                                version_key(SUPPORTED_RANGE[1])):
        lines += ["", f"installed sglang {v} (python -m swafuzz.targets.sglang.matrix VERSION "
                      "prints any release's column):", release_table(v, width)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for v in argv:
        try:
            print(release_table(v))
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
