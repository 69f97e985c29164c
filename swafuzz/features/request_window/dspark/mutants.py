"""Mutants of the window verify and the DP-padded EXTEND (feature ``dspark``: early verify
metadata, the verify graph, MLP-sync padding under a window; addendum §3-§6), built as
:mod:`features.request_window.mutants` says (``verify_early_stamped_loc`` also lets the
resolver read what its method stamps: the bug needs a source and a missing guard)."""

from __future__ import annotations

import torch

from swafuzz.features.request_window.dspark.engine import DSparkPath
from swafuzz.features.request_window.dspark.engine_graph import VerifyGraphRunner
from swafuzz.features.request_window.engine import WindowPath, path_with
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _StampedDSpark(DSparkPath):
    def install_early_verify(self, fb, core):
        core.early_verify = True
        core.swa_out_cache_loc = self.p.e.target_pool.translate_loc_from_full_to_swa(
            fb.out_cache_loc).to(torch.int32)


class _StampedPath(WindowPath):
    dspark_cls = _StampedDSpark

    def resolve(self, fb):
        core = getattr(self.forward_metadata, "core_attn_metadata", None)
        loc = getattr(core, "swa_out_cache_loc", None)
        if getattr(core, "early_verify", False) and loc is not None and \
                loc.numel() == fb.out_cache_loc.numel():
            return loc
        return super().resolve(fb)


@mutant("verify_early_stamped_loc", ("dspark_verify", "dspark_verify_graph"), "addendum §4 (DSpark target verify: "
        "sglang 0.5.23 _install_early_verify_metadata sets swa_out_cache_loc = None under a "
        "request window or ring), §3 resolver order, §6 A4", expected=("contracts",))
class VerifyEarlyStampedLoc(UnifiedEngine):
    """The early verify metadata keeps a stamped ``int32(M[loc])`` under a window and the store
    reads it before the W branch: the K rows land at paged SWA slot numbers in the workspace
    (``_install_early_verify_metadata`` must leave None under a window or ring)."""

    step_path_cls = _StampedPath


class _GroupPerRow(DSparkPath):
    def verify_groups(self, bs, rows):
        return rows


@mutant("verify_group_per_row", ("dspark_verify", "dspark_verify_graph"), "addendum §4 (DSpark target verify / "
        "draft block: num_groups = bs in make_forward_metadata_from_raw_verify), §5 W1/W3, "
        "§6 A8", expected=("error", "window"))
class VerifyGroupPerRow(UnifiedEngine):
    """The verify layout gets one group per row (the decode bucket's ``num_groups=None``)
    instead of one per request: workspace rows and history groups shift (rows land at the
    wrong workspace rows; on some Cases the engine raises, a target error)."""

    step_path_cls = path_with(WindowPath, dspark_cls=_GroupPerRow)


class _PadJoins(DSparkPath):
    def pad_layout(self, req, pos, floor, groups, pad):
        n = req.numel() - pad
        req2, pos2, floor2 = req.clone(), pos.clone(), floor.clone()
        req2[n:] = req[n - 1]
        pos2[n:] = 0
        floor2[n:] = 0
        return self.p.layout(req2, pos2, floor2, groups)


@mutant("dp_extend_pad_joins_run", ("window_dp_extend",), "addendum §5 W3 (no padding row may "
        "extend a real run); sglang 0.5.23 eager EXTEND under MLP-sync MAX_LEN padding: "
        "expand_prefill_causally pads req_pool_indices_repeated with its last entry and "
        "seq_lens_casual with 1, and init_forward_metadata passes no request_window_live_rows",
        expected=("window", "history"))
class DpExtendPadJoinsRun(UnifiedEngine):
    """MLP-sync padding rows of an EXTEND take the last real row's request slot and position 0
    and stay in the layout (no live-row cut): they extend the last real run and commit into its
    ring. This is what sglang 0.5.23's eager extend does: ``expand_prefill_causally`` pads
    ``req_pool_indices_repeated`` with its last entry, ``seq_lens_casual`` with 1, and
    ``init_forward_metadata`` passes no ``request_window_live_rows``."""

    step_path_cls = path_with(WindowPath, dspark_cls=_PadJoins)


class _ReboundRunner(VerifyGraphRunner):
    @staticmethod
    def copy_into(cap, fresh):
        """Nothing copied: the replay's metadata lives only in the fresh object, which the
        captured graph never reads."""


@mutant("verify_early_metadata_rebound", ("dspark_verify_graph",), "sglang 0.5.23 "
        "_install_early_verify_metadata (captured.copy_(metadata): the verify graphs read the "
        "captured metadata), addendum §4 (request_window_layout is a copy field, W7), spec "
        "§2.7(e) class (graph reads what capture saw)", expected=("window",))
class VerifyEarlyMetadataRebound(UnifiedEngine):
    """The early verify metadata of a replay is bound as ``forward_metadata`` instead of copied
    into the captured one: the verify graph keeps reading the layout of its capture (slot 0), so
    the batch's rows are stored and committed with the capture state's history and slots."""

    step_path_cls = path_with(WindowPath, dspark_cls=path_with(DSparkPath,
                                                                graph_runner_cls=_ReboundRunner))
