"""The request window's server-level refusals (``Refusal`` entries of its record): what the
pipeline does not drive with the window (config refusals, on a ``ServerConfig``), and what the
window hop refuses on the installed release (:func:`refusal`, a release refusal; SGLang
imported inside, where asked): detected from the release's modules and attributes, never its
version. Each message names the Case's field."""

from __future__ import annotations

import importlib.util


def tail_not_driven(c) -> bool:
    return c.enable_decoder_swa_bounded_replay and not (
        c.enable_encoder_swa_bounded_replay and c.tp_size == 1)


def graphs_with_replay(c) -> bool:
    return c.enable_encoder_swa_bounded_replay and not c.disable_cuda_graph


def refusal(config: dict, version: str) -> str | None:
    """Why a Case with ``config`` (the server-level Case's config, its field names) is not run
    on this release by the window hop, or None."""
    if not config.get("enable_encoder_swa_bounded_replay"):
        return None
    if importlib.util.find_spec("sglang.srt.mem_cache.dsv41_request_window") is None:
        return (f"config.enable_encoder_swa_bounded_replay: sglang {version} has no request "
                "window (dsv41_request_window), the one the server-level pipeline drives "
                "(allowed: false)")
    if config.get("tp_size", 1) > 1:
        from sglang.srt.layers.attention import deepseek_v4_backend as backend

        if not hasattr(backend, "_pad_rows"):
            return (f"config.tp_size: attention TP above 1 with "
                    f"enable_encoder_swa_bounded_replay needs the release's padded eager-EXTEND "
                    f"layout (the backend's _pad_rows), which sglang {version} lacks: its "
                    "padded extend under the window is not driven (allowed: 1)")
    return None
