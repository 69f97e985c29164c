"""The Case fields of the padded SWA page stride (feature ``padded_pages``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'page_pad_bytes', 'int', 0, 'canary bytes after each SWA page\'s slots', hi=1 << 20),
)
