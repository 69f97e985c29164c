"""Bug-zoo mutants of prefix hits under a late-layer tail, the compressor side of encoder replay
and the separate replay forward (issue 12; addendum §2.3, §2.4, §5 T5 / E1 / E2, §6 A13).

Each is a :class:`targets.engine.UnifiedEngine` whose ``window_path_cls`` is a
:class:`targets.tail_graph.TailGraphPath` subclass (the engine's window path) overriding one method of
:class:`targets.tail_prefix.TailPrefixMixin`.

==  ================================  ==========================================  ===============
#   name                              bug (source)                                kinds
==  ================================  ==========================================  ===============
50  prefix_hit_without_reprefill      a radix hit on a pool with a late-layer     tail_prefix
                                      tail keeps the whole matched prefix: no
                                      ``length - W`` cap, the late layers read
                                      SWA rows they never wrote (T5, A13; 0.5.23
                                      ``swa_reprefill_tail_tokens``)
51  fold_compresses_replay_rows       the fold hands the compressors the replay   tail_prefix,
                                      rows' full locations instead of 0: cached   encoder_replay,
                                      c4/c128/indexer entries are rewritten (E1;  replay_tail
                                      0.5.23 ``_compressor_out_loc``)
52  separate_replay_wrong_span        the separate replay forward replays the     replay_separate
                                      last ``r`` tokens of the request's new
                                      length (``seq_lens``) instead of its cached
                                      prefix ``[Pq - r, Pq)`` (E2;
                                      ``run_encoder_swa_replay``)
53  separate_replay_no_reset          the separate replay forward runs without    replay_separate
                                      resetting the hit slots' windows first
                                      (E2; ``_reset_windows_and_collect_hits``)
==  ================================  ==========================================  ===============
"""

from __future__ import annotations

from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant
from swafuzz.targets.tail_graph import TailGraphPath


# 50 -----------------------------------------------------------------------------------------
class _NoReprefillPath(TailGraphPath):
    def prefix_hit(self, n, length):
        """The whole matched prefix is reused: no late-layer re-prefill cap."""
        return n


@mutant("prefix_hit_without_reprefill", ("tail_prefix",), "addendum §5 T5 and §6 A13 (a radix "
        "hit must re-prefill the last 128 tokens under decoder SWA bounded replay: sglang "
        "0.5.23 UnifiedRadixCache.swa_reprefill_tail_tokens, applied by "
        "mem_cache/common.py _req_radix_key)")
class PrefixHitWithoutReprefill(UnifiedEngine):
    window_path_cls = _NoReprefillPath


# 51 -----------------------------------------------------------------------------------------
class _FoldCompressesPath(TailGraphPath):
    @staticmethod
    def compressor_loc(loc, keep):
        """The compressors get ``out_cache_loc`` as is, replay rows included."""
        return loc


@mutant("fold_compresses_replay_rows", ("tail_prefix", "encoder_replay", "replay_tail"),
        "addendum §2.3 and §5 E1 (0.5.23 fold: replay rows' compressor location is 0, "
        "DeepseekV4AttnBackend._compressor_out_loc with encoder_swa_compress_rows)")
class FoldCompressesReplayRows(UnifiedEngine):
    window_path_cls = _FoldCompressesPath


# 52 -----------------------------------------------------------------------------------------
class _WrongSpanPath(TailGraphPath):
    def replay_span(self, rid, r, new):
        """The span ends at the request's length after the step's allocation (its seq_lens)
        instead of its cached prefix."""
        end = len(self.e.allocator.tokens[rid])
        return end - r, end


@mutant("separate_replay_wrong_span", ("replay_separate",), "addendum §2.3 and §5 E2 (separate "
        "replay forward of 0.5.21/0.5.22 and 0.5.23 ROCm: out_cache_loc = req_to_token[slot, "
        "P - r:P], encoder_swa_replay.run_encoder_swa_replay)")
class SeparateReplayWrongSpan(UnifiedEngine):
    window_path_cls = _WrongSpanPath


# 53 -----------------------------------------------------------------------------------------
class _NoResetSeparatePath(TailGraphPath):
    def reset_hits(self, per):
        """The hit slots keep their old window (no reset before the replay forward)."""


@mutant("separate_replay_no_reset", ("replay_separate",), "addendum §2.3 and §5 E2 (reset "
        "before replay: encoder_swa_replay._reset_windows_and_collect_hits, called by "
        "run_encoder_swa_replay)")
class SeparateReplayNoReset(UnifiedEngine):
    window_path_cls = _NoResetSeparatePath
