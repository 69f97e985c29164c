"""The ``request_window`` feature's facts about the ``sglang`` target that are code (its probe of the
installed release, refusals, derived answers); its table rows and per-release answers are data,
``sglang_facts.json`` beside this file. Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts


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


FACTS = SGLangFacts(probe=probe, refusal=refusal, describe=describe)
