"""The ``prefix_share`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('prefix sharing (admit prefix_rid / prefix_len)',
     'modelled', 'modelled',
     ("the radix tree's lock references are the adapter's page holders; the release's allocator "
      'allocates the new tokens (alloc_extend with the prefix as prefix_lens / last_loc, alloc at '
      'page size 1) and frees only pages no live request holds (free / free_swa / free_full); '
      'SWARadixCache itself is not built')),
)
RANGES: dict = {}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
