"""The Case fields of DP attention (feature ``dp``) at both levels; their contract:
``SEMANTICS.md`` beside this file, their cross-field rules: ``rules.py`` (component) and
``swafuzz.server.case.validate`` (server)."""

from swafuzz.features.case_field import CaseField
from swafuzz.features.step_op import StepOp

FIELDS = (
    CaseField('step', 'rank_tokens', 'tuple[int, ...]', (), 'the other DP ranks\' token (or tail row) counts',
              hi=2**16, ops=('verify', 'draft_extend', 'draft_decode', 'dp_decode', 'extend'),
              after='tokens'),
    CaseField('step', 'dp_extend', 'bool', False, 'the DP batch runs as an EXTEND (some rank extends)',
              ops=('verify', 'draft_extend', 'dp_decode'), after='exec'),
    # server level: the data-parallel attention ranks (each request's ``rank``) and the MoE /
    # prefill-graph / environment settings their padding runs under (the last three came after
    # the first draws: left out of the JSON while at their defaults)
    CaseField('config', 'dp_size', 'int', 1, 'data-parallel ranks', lo=1, hi=8, after='tp_size',
              always=True),
    CaseField('config', 'enable_dp_attention', 'bool', False, 'data-parallel attention',
              after='dp_size', always=True),
    CaseField('config', 'moe_dense_tp_size', 'int | None', None, 'the dense MLP\'s TP size',
              lo=1, hi=8, after='enable_dp_attention', always=True),
    CaseField('config', 'moe_a2a_backend', 'str | None', None,
              'the MoE all-to-all backend (0.5.23\'s choices; the release checks its own again)',
              choices=('none', 'deepep', 'mooncake', 'nixl', 'mori', 'ascend_fuseep',
                       'flashinfer', 'megamoe', 'deepep_v2', 'ascend_tp', 'pplx',
                       'flashinfer_megamoe')),
    CaseField('config', 'disable_prefill_cuda_graph', 'bool', False, 'no prefill graphs'),
    # the prefill graph the attention-DP ranks vote on (its captured token counts): what makes the
    # release convert a decoding rank's batch to EXTEND when a peer extends
    CaseField('config', 'cuda_graph_backend_prefill', 'str | None', None,
              'the prefill graph backend (breakable: the DP ranks vote on replaying it)',
              choices=('breakable',)),
    CaseField('config', 'cuda_graph_bs_prefill', 'tuple[int, ...] | None', None,
              'captured prefill token counts', lo=1, hi=1 << 12, increasing=True),
    CaseField('config', 'env', 'tuple[tuple[str, str], ...]', (),
              'the deployment\'s environment (the release reads these limits from it, not from '
              'ServerArgs)', choices=('SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK',), lo=1,
              hi=1 << 20),
    CaseField('request', 'rank', 'int', 0, 'its data-parallel attention rank', hi=7, always=True),
)

#: the op DP attention adds: one decode token per request, padded to the other ranks' maximum
#: (an empty rank runs IDLE on dummy rows only, so ``rids`` may be empty and is always written)
OPS = (
    StepOp('dp_decode', 'a DECODE (IDLE without rids) padded to the other ranks\' rows',
           after='idle', fields=('rids', 'exec'), pool='target', emit=('rids',),
           empty_rids=True, grows=1),
)
