"""The Case fields of metadata prepared inside the graph (feature ``raw_metadata``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('graph', 'prep_in_graph', 'bool', False, 'the graph prepares its metadata from raw inputs'),
)
