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
from swafuzz.targets.sglang import SUPPORTED_RANGE, TABLE, in_range, version_key

#: TABLE component (its leading words, as ``str.startswith``) -> ``(first, last, answer, why)``
#: for the releases ``first .. last`` (inclusive) whose answer differs from the 0.5.23 column
#: (0.5.12 keeps its own column)
RANGES: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    # (more specific keys first: the first key a component starts with answers)
    "late-layer tail under graphs: enter/exit": (
        ("0.5.13", "0.5.20", "absent", "no late-layer tail (0.5.21+)"),
        ("0.5.21", "0.5.21", "absent", "no prefill-graph tail (0.5.22+)"),
        ("0.5.22", "0.5.22", "refused",
         "the prefill-graph tail exists; the adapter drives 0.5.23's seams (the compressor "
         "flags, row-bucket graphs): kind tail_graphs refused (measured: AttributeError on "
         "low_ratios before the refusal was added)"),),
    "late-layer tail under graphs: DecoderReplayTail": (
        ("0.5.13", "0.5.22", "absent", "row-bucket tail graphs (DecoderReplayTail) are 0.5.23"),),
    "DECODE graphs under a request window": (
        ("0.5.13", "0.5.20", "absent", "no request window (0.5.21+)"),
        ("0.5.21", "0.5.22", "refused",
         "the decode bucket exists; the adapter drives 0.5.23's decode-bucket code "
         "(commit_packed_rows, the buffer registry): kind window_graphs refused"),),
    "breakable prefill graphs under a request window": (
        ("0.5.13", "0.5.20", "absent", "no request window (0.5.21+)"),
        ("0.5.21", "0.5.22", "absent",
         "prefill graphs were rejected with encoder replay (addendum §4); window_layout has no "
         "padded_rows"),),
    "target verify under a request window": (
        ("0.5.13", "0.5.20", "absent", "no request window (0.5.21+)"),
        ("0.5.21", "0.5.22", "real",
         "measured on 0.5.22: kind dspark_verify, 15 cases, 0 findings"),),
    "early verify metadata": (
        ("0.5.13", "0.5.20", "absent", "no request window (0.5.21+)"),),
    "DP-padded EXTEND under a request window": (
        ("0.5.13", "0.5.20", "absent", "no request window (0.5.21+)"),
        ("0.5.21", "0.5.22", "refused",
         "the kind's extends fold encoder replay (0.5.23); these releases replay in a forward "
         "of their own: kind window_dp_extend refused"),),
    "ring: DSpark draft block rows": (
        ("0.5.13", "0.5.22", "absent", "no _dspark_swa_ring_out_cache_loc"),),
    "prefix hit under a late-layer tail": (
        ("0.5.13", "0.5.20", "absent", "no late-layer tail (0.5.21+)"),
        ("0.5.21", "0.5.22", "refused",
         "the adapter drives 0.5.23's seams (replay_len, _fold_batch, _compressor_out_loc): "
         "kind tail_prefix refused"),),
    "encoder replay fold and separate forward": (
        ("0.5.13", "0.5.20", "absent", "no encoder SWA replay (0.5.21+)"),
        ("0.5.21", "0.5.22", "refused",
         "run_encoder_swa_replay exists (the separate forward); the adapter drives 0.5.23's "
         "_build_replay_batch / _fold_batch: kind replay_separate refused"),),
    "compressor write locations": (
        ("0.5.13", "0.5.20", "absent", "no encoder SWA replay (0.5.21+)"),
        ("0.5.21", "0.5.22", "refused", "driven with 0.5.23's seams only"),),
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
    "draft-extend metadata prep": (
        ("0.5.13", "0.5.19", "modelled",
         "no _fill_cuda_graph_swa_out_cache_loc (checked absent in 0.5.16, present in 0.5.20)"),),
    "request window: window_layout": (
        ("0.5.13", "0.5.20", "absent", "dsv41_request_window is 0.5.21+"),
        ("0.5.21", "0.5.22", "real",
         "window_layout without zero_row / padded_rows, RequestWindow without activate_idle"),),
    "request window kernels": (
        ("0.5.13", "0.5.20", "absent", "no request window"),
        ("0.5.21", "0.5.22", "modelled",
         "copy_packed_tokens (torch, V4 byte layout; buffer and commit, commit to sink_row "
         "when unmasked) replaced by row copies on swafuzz's row buffers"),),
    "late-layer tail": (
        ("0.5.13", "0.5.20", "absent", "first in 0.5.21"),
        ("0.5.21", "0.5.22", "real",
         "late_layer_tail_layout in kernels/ops/attention/dsv4_attn_metadata_kernels.py"),),
    "encoder SWA replay fold": (
        ("0.5.13", "0.5.20", "absent", "no encoder SWA replay (0.5.21+)"),
        ("0.5.21", "0.5.22", "modelled",
         "these releases replay in a forward of its own (run_encoder_swa_replay), not folded "
         "(fold_encoder_swa_replay is 0.5.23): the engine model's fold runs, resetting the slot "
         "through the release's RequestWindow.reset"),),
    "store kernel, pool layout dsv4": (
        ("0.5.13", "0.5.19", "real", "triton_fused_store_flashmla from sglang.jit_kernel"),),
    "ring: allocator accounting": (
        ("0.5.13", "0.5.19", "absent", "swa_req_ring_size is 0.5.20+"),
        ("0.5.20", "0.5.22", "absent",
         "the allocator's ring accounting exists but nothing on the DSV4 path writes ring rows "
         "(no _ring_inject_loc / swa_ring_rows): ring Cases refused"),),
    "ring: write rows": (("0.5.13", "0.5.22", "absent", "no _ring_inject_loc"),),
    "ring: resolver under a ring": (("0.5.13", "0.5.22", "absent", "ring Cases refused"),),
    "in-graph stamp": (
        ("0.5.13", "0.5.20", "real", "stamps the translation (no window, no ring test)"),
        ("0.5.21", "0.5.22", "real", "translation skipped under a window only"),),
}


def answer(component: str, version: str) -> tuple[str, str]:
    """``(answer, why)`` of the TABLE row ``component`` for release ``version`` (in range)."""
    if not in_range(version):
        raise ValueError(f"sglang {version} is outside the supported range "
                         f"{SUPPORTED_RANGE[0]} .. {SUPPORTED_RANGE[1]}")
    row = next(r for r in TABLE if r[0] == component)
    k = version_key(version)
    if k < version_key("0.5.13"):
        return row[1], ""
    for key, ranges in RANGES.items():
        if component.startswith(key):
            for first, last, ans, why in ranges:
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
