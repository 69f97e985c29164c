"""The ``verify_reject`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('rejected draft tokens after verify (verify accept)',
     'real', 'real',
     ("the release's allocator free() of the rejected slots past the last accepted token's page, "
      "called as 0.5.12's EAGLE v1 EagleVerifyInput.verify does (chain drafts, "
      'align_evict_mask_to_page_size); which slots to free is modelled from the Case. 0.5.23 runs '
      'spec v2 only, which over-allocates and frees at request release instead: the same allocator'
      ' calls, a schedule this harness does not model')),
)
RANGES: dict = {}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
