"""The ``encoder_replay`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers, its probe of the installed release
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('encoder SWA replay fold (fold_encoder_swa_replay)',
     'absent', 'modelled',
     ('fold_encoder_swa_replay itself needs a ScheduleBatch and a model runner; its pieces run '
      "real on 0.5.23 (_reset_windows_and_collect_hits, _fold_batch: see the row 'encoder replay "
      "fold and separate forward' below), the engine model only calls them in order")),
    (('encoder replay fold and separate forward: _reset_windows_and_collect_hits, _fold_batch, '
      '_build_replay_batch'),
     'absent', 'real',
     ('0.5.23 srt/model_executor/encoder_swa_replay.py on a ScheduleBatch stand-in (the fields '
      "those functions read) and a req_to_token table from the allocator's tokens: the reset of "
      'the real RequestWindow, the folded out_cache_loc / row_floor / keep_rows, the separate '
      "forward's out_cache_loc = req_to_token[slot, P-r:P]; replay_len's constant 128 is scaled to"
      " pool.window; the separate forward's per-run floor (set inside make_core_attn_metadata, "
      'CUDA only) is modelled; fold_encoder_swa_replay / run_encoder_swa_replay themselves need a '
      'model runner. 0.5.12 has no encoder replay')),
)
#: component prefix -> (first, last, answer, why) where it differs from the 0.5.23 column
RANGES = {
    'encoder replay fold and separate forward': (
        ('0.5.13', '0.5.20', 'absent',
         'no encoder SWA replay (0.5.21+)'),
        ('0.5.21', '0.5.22', 'refused',
         ("run_encoder_swa_replay exists (the separate forward); the adapter drives 0.5.23's "
          '_build_replay_batch / _fold_batch: kind replay_separate refused')),
    ),
    'encoder SWA replay fold': (
        ('0.5.13', '0.5.20', 'absent',
         'no encoder SWA replay (0.5.21+)'),
        ('0.5.21', '0.5.22', 'modelled',
         ('these releases replay in a forward of its own (run_encoder_swa_replay), not folded '
          "(fold_encoder_swa_replay is 0.5.23): the engine model's fold runs, resetting the slot "
          "through the release's RequestWindow.reset")),
    ),
}


def probe(found) -> dict:
    """Encoder SWA replay folded into the extend (``fold_encoder_swa_replay``, 0.5.23); 0.5.21 /
    0.5.22 replay in a forward of their own (``run_encoder_swa_replay``), which the Case's
    ``extend(replay=...)`` (the 0.5.23 fold) does not describe."""
    replay = (found.first_module("sglang.srt.model_executor.encoder_swa_replay")
              if found.WINDOW_MODULE else None)
    return {"replay_mod": replay,
            "FOLD": replay is not None and hasattr(replay, "fold_encoder_swa_replay")}


def describe(found) -> list[tuple[str, str]]:
    return [("encoder replay folded into the extend (fold_encoder_swa_replay)",
             "yes" if found.FOLD else "no")]


FACTS = SGLangFacts(table=TABLE, ranges=RANGES, probe=probe, describe=describe)
