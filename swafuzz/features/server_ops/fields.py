"""The step ops of the server's own state changes (feature ``server_ops``); their contract:
``SEMANTICS.md`` beside this file, their rules: ``rules.py``."""

from swafuzz.features.step_op import StepOp

OPS = (
    StepOp('flush', 'the cache flush: refused while a request is live, else both allocators '
           'cleared and M unmapped', after='remap'),
    StepOp('refused_admit', 'an admission of length tokens that fits the full pool but not the '
           'SWA pool: the allocator refuses it and nothing changes', after='flush',
           fields=('rid', 'length')),
)
