"""The Case fields of the request window (feature ``request_window``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('pool', 'request_window', 'int', 0, 'ring capacity per request slot (0: paged SWA pool)',
              hi=2**16),
    CaseField('pool', 'window_slots', 'int', 0, 'request slots 1..window_slots (window only)', hi=4096),
    CaseField('pool', 'window_chunk', 'int', 0, 'workspace rows past (window_slots + 1) * window',
              hi=2**16),
    CaseField('step', 'lengths', 'tuple[int, ...]', (), 'extend: the new tokens of each request in rids',
              lo=1, hi=2**16, ops=('extend',)),
    CaseField('config', 'enable_encoder_swa_bounded_replay', 'bool', False,
              'server level: the request window', after='disable_radix_cache', always=True),
)
