"""The Case fields of encoder replay (feature ``encoder_replay``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('step', 'replay', 'tuple[int, ...]', (), 'extend: the requests of rids whose encoder output is replayed',
              ops=('extend',)),
    CaseField('pool', 'separate_replay', 'int', 0,
              '1: encoder replay as a separate EXTEND forward (0: fold)', hi=1),
)
