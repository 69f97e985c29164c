"""Rules of the DeepSeek-V4 SWA cache layout (``pool.layout == "dsv4"``;
``features/dsv4_layout/SEMANTICS.md``): 512-wide bf16 K rows, no pad of the Case's own."""

from __future__ import annotations

from swafuzz.scenarios.schema import CaseError


def validate(case) -> None:
    pool = case.pool
    if pool.layout != "dsv4":
        return
    if pool.row_width != 512:
        raise CaseError("pool.row_width", "must be 512 with layout dsv4 (448 nope + 64 rope "
                        f"bf16 values per K row; got {pool.row_width!r})")
    if pool.row_dtype != "bfloat16":
        raise CaseError("pool.row_dtype", "must be bfloat16 with layout dsv4 (got "
                        f"{pool.row_dtype!r})")
    if pool.page_pad_bytes != 0:
        raise CaseError("pool.page_pad_bytes", "must be absent or 0 with layout dsv4 (the "
                        "layout pads each page to ceil(584*P/576)*576 bytes itself; got "
                        f"{pool.page_pad_bytes!r})")
