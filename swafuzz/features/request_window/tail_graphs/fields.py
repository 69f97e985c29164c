"""The Case fields of the late-layer tail graphs (feature ``tail_graphs``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField('graph', 'tail_buckets', 'tuple[int, ...]', (), 'row buckets of the late-layer tail graphs',
              lo=1, hi=2**16, increasing=True, span=True),
    CaseField('graph', 'tail_capacity', 'int', 0,
              'rows of the prefill-graph tail\'s location buffer (0: none)', hi=2**16, span=True),
    CaseField('step', 'tail_exec', 'str', '',
              'late layers: "" eager, "bucket" row-bucket graph, "prefill" graph',
              choices=('bucket', 'prefill'), ops=('extend', 'dp_decode')),
)
