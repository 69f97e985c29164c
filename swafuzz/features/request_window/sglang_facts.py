"""The ``request_window`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers, its probe of the installed release
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    (('request window: window_layout (torch branch), RequestWindow reset / activate / '
      'activate_idle / buffer / commit'),
     'absent', 'real',
     ('0.5.12 has no request window (first in 0.5.21): Cases with pool.request_window are refused '
      'with TargetUnavailable. 0.5.23: the torch branch every CPU/HIP device takes, and the '
      'RequestWindow class on swafuzz buffers; its history length (the constant 128) is scaled to '
      "the Case's pool.window by defaulting window_layout's window argument")),
    ('request window kernels: build_window_layout, copy_packed_rows, commit_packed_rows',
     'absent', 'modelled',
     ('Triton, CUDA only (the CUDA branch of window_layout is not taken on CPU); copy and commit '
      "are replaced in the module's namespace by row copies with the contract of addendum §2.2 "
      '(commit: masked rows to req * capacity + pos % capacity, tags = pos)')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'request window: window_layout': (
        ('0.5.13', '0.5.20', 'absent',
         'dsv41_request_window is 0.5.21+'),
        ('0.5.21', '0.5.22', 'real',
         'window_layout without zero_row / padded_rows, RequestWindow without activate_idle'),
    ),
    'request window kernels': (
        ('0.5.13', '0.5.20', 'absent',
         'no request window'),
        ('0.5.21', '0.5.22', 'modelled',
         ('copy_packed_tokens (torch, V4 byte layout; buffer and commit, commit to sink_row when '
          "unmasked) replaced by row copies on swafuzz's row buffers")),
    ),
}


def probe(found) -> dict:
    """The request window and the late-layer tail's layout function (the window path drives
    both)."""
    window_mod = found.first_module("sglang.srt.mem_cache.dsv41_request_window")
    module = window_mod is not None and hasattr(window_mod, "RequestWindow")
    #: the late-layer tail's layout function: ``kernels/ops/attention/dsv4/attn_metadata_kernels``
    #: (0.5.23) or ``kernels/ops/attention/dsv4_attn_metadata_kernels`` (0.5.21, 0.5.22)
    tail_mod = None
    for n in ("sglang.kernels.ops.attention.dsv4.attn_metadata_kernels",
              "sglang.kernels.ops.attention.dsv4_attn_metadata_kernels"):
        m = found.first_module(n) if module else None
        if m is not None and hasattr(m, "late_layer_tail_layout"):
            tail_mod = m
            break
    #: the window's row-copy seam: ``copy_packed_rows`` + ``commit_packed_rows`` (0.5.23,
    #: Triton) or ``copy_packed_tokens`` (0.5.21, 0.5.22: V4 byte layout, buffer and commit)
    copy = ("copy_packed_rows" if module and hasattr(window_mod, "commit_packed_rows")
            else "copy_packed_tokens" if module and hasattr(window_mod, "copy_packed_tokens")
            else None)
    return {
        "window_mod": window_mod,
        "WINDOW_MODULE": module,
        #: ``RequestWindow.activate_idle`` and the resolver's IDLE-first branch I (0.5.23);
        #: without it (0.5.21, 0.5.22) the resolver tests W first: addendum A2
        "WINDOW_IDLE": module and hasattr(getattr(window_mod, "RequestWindow", None),
                                          "activate_idle"),
        "tail_mod": tail_mod,
        "WINDOW_COPY": copy,
        #: what a request-window / late-layer-tail Case needs and the release lacks
        "WINDOW_MISSING": tuple(w for w, ok in (
            ("mem_cache.dsv41_request_window.RequestWindow", module),
            ("late_layer_tail_layout (kernels/ops/attention/dsv4[_]attn_metadata_kernels)",
             tail_mod is not None),
            ("a row-copy seam (copy_packed_rows / copy_packed_tokens)", copy is not None),
            ("DSV4Metadata.late_layer_tail / LateLayerTail",
             hasattr(found.backend_mod, "LateLayerTail")),
        ) if not ok),
    }


def refusal(case, found) -> str | None:
    if case.pool.request_window and found.WINDOW_MISSING:
        return (f"sglang {found.VERSION} has no request window (lacks "
                f"{'; '.join(found.WINDOW_MISSING)}); a Case with pool.request_window needs a "
                "release with it")
    return None


def describe(found) -> list[tuple[str, str]]:
    yes = {True: "yes", False: "no"}
    return [
        ("request window", "yes" if not found.WINDOW_MISSING
         else "no: " + "; ".join(found.WINDOW_MISSING)),
        ("resolver IDLE branch I (RequestWindow.activate_idle)", yes[bool(found.WINDOW_IDLE)]),
        ("window row copy", found.WINDOW_COPY or "none"),
    ]


FACTS = SGLangFacts(table=TABLE, ranges=RANGES, probe=probe, refusal=refusal, describe=describe)
