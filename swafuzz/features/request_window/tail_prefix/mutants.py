"""Mutants of prefix hits under a late-layer tail and of the fold's compressor locations (feature
``tail_prefix``; addendum §2.3, §2.4, §5 T5 / E1, §6 A13): one
:class:`~features.request_window.tail_prefix.engine.TailPrefixMixin` method overridden on the
engine's :class:`TailGraphPath` (:mod:`features.request_window.mutants`). The separate replay
forward's mutants are :mod:`features.request_window.encoder_replay.mutants`'."""

from __future__ import annotations

from swafuzz.features.request_window.tail_graphs.engine import TailGraphPath
from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant


class _NoReprefillPath(TailGraphPath):
    def prefix_hit(self, n, length):
        return n


@mutant("prefix_hit_without_reprefill", ("tail_prefix",), "addendum §5 T5 and §6 A13 (a radix "
        "hit must re-prefill the last 128 tokens under decoder SWA bounded replay: sglang 0.5.23 "
        "UnifiedRadixCache.swa_reprefill_tail_tokens, applied by mem_cache/common.py "
        "_req_radix_key)", expected=("reprefill", "tail", "compressor", "invariants", "pool_bytes"))
class PrefixHitWithoutReprefill(UnifiedEngine):
    """A radix hit on a pool with a late-layer tail keeps the whole matched prefix: no ``length
    - W`` cap, so the late layers read SWA rows they never wrote (T5, A13)."""

    step_path_cls = _NoReprefillPath


class _FoldCompressesPath(TailGraphPath):
    @staticmethod
    def compressor_loc(loc, keep):
        return loc


@mutant("fold_compresses_replay_rows", ("tail_prefix", "encoder_replay", "replay_tail"),
        "addendum §2.3 and §5 E1 (0.5.23 fold: replay rows' compressor location is 0, "
        "DeepseekV4AttnBackend._compressor_out_loc with encoder_swa_compress_rows)",
        expected=("compressor",))
class FoldCompressesReplayRows(UnifiedEngine):
    """The fold hands the compressors the replay rows' full locations instead of 0: cached
    c4/c128/indexer entries are rewritten (E1). Its kinds span ``tail_prefix`` and
    ``encoder_replay``; it lives with the first."""

    step_path_cls = _FoldCompressesPath
