"""The Case fields of prefill graphs (feature ``prefill_graphs``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('graph', 'prefill_buckets', 'tuple[int, ...]', (),
              'breakable prefill graph token buckets (issue 12)', lo=1, hi=2**16, increasing=True),
)
