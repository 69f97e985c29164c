"""The Case fields of radix-cache prefix sharing (feature ``prefix_share``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('step', 'prefix_rid', 'int | None', None, 'admit: radix-cache prefix hit on this live request',
              ops=('admit',)),
    CaseField('step', 'prefix_len', 'int | None', None, 'admit: shared leading tokens of prefix_rid',
              lo=1, hi=2**16, ops=('admit',)),
)
