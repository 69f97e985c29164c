"""The Case fields of DP attention (feature ``dp``); their contract: ``SEMANTICS.md``
beside this file, their cross-field rules: ``rules.py``."""

from swafuzz.features.case_field import CaseField
from swafuzz.features.step_op import StepOp

FIELDS = (
    CaseField('step', 'rank_tokens', 'tuple[int, ...]', (), 'the other DP ranks\' token (or tail row) counts',
              hi=2**16, ops=('verify', 'draft_extend', 'draft_decode', 'dp_decode', 'extend'),
              after='tokens'),
    CaseField('step', 'dp_extend', 'bool', False, 'the DP batch runs as an EXTEND (some rank extends)',
              ops=('verify', 'draft_extend', 'dp_decode'), after='exec'),
)

#: the op DP attention adds: one decode token per request, padded to the other ranks' maximum
#: (an empty rank runs IDLE on dummy rows only, so ``rids`` may be empty and is always written)
OPS = (
    StepOp('dp_decode', 'a DECODE (IDLE without rids) padded to the other ranks\' rows',
           after='idle', fields=('rids', 'exec'), pool='target', emit=('rids',),
           empty_rids=True, grows=1),
)
