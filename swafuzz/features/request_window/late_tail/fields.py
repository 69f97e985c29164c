"""The Case fields of the late-layer tail (feature ``late_tail``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'late_layer_start', 'int', 0, 'first late (tail-only) target layer (0: no tail)',
              hi=63),
    CaseField('config', 'enable_decoder_swa_bounded_replay', 'bool', False,
              'server level: the late-layer tail', after='enable_encoder_swa_bounded_replay',
              always=True),
    CaseField('model', 'late_layer_start', 'int', 0, 'the first late (tail-only) layer, from the '
              'checkpoint (1..layers-1 with the tail; 0: none)', hi=7),
)
