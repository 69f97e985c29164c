"""The Case fields of the late-layer tail (feature ``late_tail``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'late_layer_start', 'int', 0, 'first late (tail-only) target layer (0: no tail)',
              hi=63),
)
