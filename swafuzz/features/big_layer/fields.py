"""The Case field of layers past 2^31 bytes (feature ``big_layer``): low SWA pages held from the
start, so a Case's pages sit high in a big layer; its contract: ``SEMANTICS.md`` beside this
file, its cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'swa_held_pages', 'int', 0,
              'SWA pages 1..n held from the start by no request of the Case (never free)',
              hi=1 << 24),
)
