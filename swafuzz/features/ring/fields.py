"""The Case fields of the per-request SWA ring (feature ``ring``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'swa_ring', 'int', 0, 'ring rows per request slot (0: paged SWA, no ring)',
              hi=2**16, after='late_layer_start'),
    CaseField('pool', 'req_slots', 'int', 0, 'request slots 1..req_slots with a ring (slot 0 is padding)',
              hi=4096, after='swa_ring'),
)
