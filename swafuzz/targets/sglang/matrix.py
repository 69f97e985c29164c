"""Per-release answers of the ``sglang`` target's real/modelled table, for the releases between
the two the :data:`~swafuzz.targets.sglang.TABLE` columns name (0.5.12, 0.5.23).

Reads no sglang. A row with a derivation (:data:`DERIVE`, the features' ``derive``) is generated
from the release's recorded probe (:mod:`~swafuzz.targets.sglang.detected`); else from
:data:`RANGES`; a row in neither answers as its 0.5.23 column (0.5.13+), or everywhere where
0.5.12 and 0.5.23 agree.

    python -m swafuzz.targets.sglang.matrix 0.5.16 0.5.21   # the table's column per release

:func:`table_text` is the whole table as ``swafuzz list --target sglang`` prints it.
"""

from __future__ import annotations

import sys
import textwrap

import swafuzz.targets.sglang as sg
from swafuzz.features.sglang_facts import facts
from swafuzz.targets.sglang import SUPPORTED_RANGE, TABLE, in_range, version_key

#: TABLE component prefix (longest match answers) -> ``(first, last, answer, why)`` for the
#: releases ``first .. last`` (inclusive) differing from the 0.5.23 column; features' rows in
#: their ``sglang_facts.py``
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


def _derive_allocator(found: dict[str, str]) -> tuple[str, str] | None:
    switch = found.get("paged allocator CPU switch (use_triton_kernels)") == "yes"
    free_full = found.get("SWATokenToKVPoolAllocator.free_full") == "yes"
    module = found.get("SWA allocator module", "?")
    if switch and free_full and module == "sglang.srt.mem_cache.allocator.swa":
        return None
    return "real", ("detected: " + ("its use_triton_kernels switch (torch reference allocators)"
                                    if switch else
                                    "no use_triton_kernels switch: alloc_extend_kernel routed to "
                                    "the module's alloc_extend_naive, decodes through alloc_extend "
                                    "(as 0.5.12)")
                    + ("; free_full" if free_full else
                       "; no free_full (free = full side then free_swa)")
                    + f"; SWATokenToKVPoolAllocator from {module}")


def _derive_per_step(found: dict[str, str]) -> tuple[str, str] | None:
    if found.get("per_step_draft_out_cache_loc") == "yes":
        return None
    return "modelled", "detected: no eagle_utils.per_step_draft_out_cache_loc: the model's layout"


def _derive_eviction(found: dict[str, str]) -> tuple[str, str] | None:
    how = found.get("window eviction")
    if how is None:
        return "real", ("its recorded probe predates the row: the path (segment free or "
                        "free_swa) is detected when the target runs")
    return None if how.startswith("free_swa_out_of_window_slots") else ("real", how)


#: component prefix -> how a release's recorded probe (:mod:`.detected`) answers the row (None:
#: the 0.5.23 column's); features' in their facts (``derive``)
DERIVE = {"allocator (alloc": _derive_allocator,
          "multi-step draft per-step write targets": _derive_per_step,
          "window eviction": _derive_eviction,
          **{k: d for f in facts() for k, d in f.derive.items()}}


def _longest(keys, component: str) -> str | None:
    found = [k for k in keys if component.startswith(k)]
    return max(found, key=len) if found else None


def detected_rows(version: str) -> dict[str, str] | None:
    """The recorded probe's inspection rows of ``version`` (a post-release without a record of
    its own: its release's), or None."""
    rec = sg.DETECTED.get(version) or sg.DETECTED.get(version.split(".post")[0])
    return rec.get("found") or None if rec else None


def answer(component: str, version: str) -> tuple[str, str]:
    """``(answer, why)`` of the TABLE row ``component`` for release ``version`` (in range)."""
    if not in_range(version):
        raise ValueError(f"sglang {version} is outside the supported range "
                         f"{SUPPORTED_RANGE[0]} .. {SUPPORTED_RANGE[1]}")
    row = next(r for r in TABLE if r[0] == component)
    k = version_key(version)
    if k < version_key("0.5.13"):
        return row[1], ""
    found = detected_rows(version)
    dkey = _longest(DERIVE, component)
    if found is not None and dkey is not None:
        got = DERIVE[dkey](found)
        return got if got is not None else (row[2], "")
    key = _longest(RANGES, component)
    for first, last, ans, why in RANGES[key] if key else ():
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
        usage = next(x for x in __doc__.splitlines() if "python -m" in x)
        print("usage: " + usage.split("#")[0].strip(), file=sys.stderr)
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
