"""The Case fields of the DSV4 cache layout (feature ``dsv4_layout``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'layout', 'str', 'rows', 'the SWA pool\'s cache layout: plain rows, or 584-byte DSV4 tokens',
              choices=('rows', 'dsv4')),
)
