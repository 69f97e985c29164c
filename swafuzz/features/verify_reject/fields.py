"""The Case fields of rejected draft tokens (feature ``verify_reject``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('step', 'accept', 'tuple[int, ...]', (), 'verify / draft_extend: accepted tokens per request in rids',
              lo=1, hi=2**16, ops=('verify', 'draft_extend'), after='rids'),
)
