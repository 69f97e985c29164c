"""The Case fields of the draft-extend buffer (feature ``draft_extend_buffer``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('graph', 'draft_extend_buffer', 'bool', False,
              'draft-extend graphs read their locations from a capture-time buffer'),
)
