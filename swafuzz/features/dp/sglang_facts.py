"""The ``dp`` feature's facts about the ``sglang`` target: its rows of the real/modelled
table, its per-release answers
(:class:`swafuzz.features.sglang_facts.SGLangFacts`; the record's hook ``sglang.facts``).
Imports no SGLang at module level."""

from __future__ import annotations

from swafuzz.features.sglang_facts import SGLangFacts

#: its rows of the real/modelled table (component, 0.5.12, 0.5.23, why)
TABLE = (
    ('graph runners, DP padding',
     'modelled', 'modelled',
     ("decode/verify, draft-extend and multi-step runners need a model runner; swafuzz's run under"
      ' tape (CPU) or CUDA graphs')),
)
RANGES: dict = {}

FACTS = SGLangFacts(table=TABLE, ranges=RANGES)
