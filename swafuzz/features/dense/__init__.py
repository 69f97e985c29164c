"""Feature record: dense SWA pool rows: decode, IDLE, draft-extend, target-verify and multi-step draft forwards, eager and in captured graphs; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='dense',
    title=(
        'dense SWA pool rows: decode, IDLE, draft-extend, target-verify and multi-step draft '
        'forwards, eager and in captured graphs'
    ),
    source='spec §2-§5, §9.1-§9.17',
    kinds=(
        Kind(
            'decode',
            'swafuzz.features.dense.kinds:decode_cases',
            'DECODE forwards, eager and graph',
        ),
        Kind(
            'idle',
            'swafuzz.features.dense.kinds:idle_cases',
            'IDLE forwards between DECODE (MTP IDLE guard)',
        ),
        Kind(
            'draft_extend',
            'swafuzz.features.dense.kinds:draft_extend_cases',
            'DRAFT_EXTEND forwards (speculative)',
        ),
        Kind(
            'target_verify',
            'swafuzz.features.dense.kinds:target_verify_cases',
            'TARGET_VERIFY forwards',
        ),
        Kind(
            'multi_step_draft',
            'swafuzz.features.dense.kinds:multi_step_draft_cases',
            'multi-step draft decode (per-step slices)',
        ),
        Kind(
            'episode',
            'swafuzz.features.dense.kinds:episode_cases',
            'a mix of every forward on the same graphs, allocator churn and window eviction',
        ),
    ),
    fields='swafuzz.features.dense.fields:FIELDS',
    oracle=(
        'swafuzz.oracles.engine',
        'swafuzz.oracles.shadow',
        'swafuzz.oracles.allocator',
        'swafuzz.oracles.expectation',
        'swafuzz.oracles.errors',
        'swafuzz.oracles.translation',
        'swafuzz.oracles.store',
        'swafuzz.oracles.paths',
        'swafuzz.oracles.invariants',
    ),
    engine=(
        'swafuzz.targets.engine',
        'swafuzz.targets.allocator',
        'swafuzz.targets.kv_pool',
        'swafuzz.targets.backend',
        'swafuzz.targets.metadata',
        'swafuzz.targets.runners',
        'swafuzz.targets.model',
        'swafuzz.targets.forward_mode',
    ),
    sglang=(
        'swafuzz.targets.sglang.engine',
        'swafuzz.targets.sglang.metadata',
        'swafuzz.targets.sglang.store',
    ),
    checks=(
        'write_targets',
        'pool_bytes',
        'write_set',
        'redzones',
        'invariants',
        'agreement',
        'capture_freeze',
        'contracts',
        'exec_path',
        'prepared',
    ),
    check_modules=(
        'swafuzz.harness.write_checks',
        'swafuzz.harness.invariant_checks',
        'swafuzz.harness.cross_checks',
        'swafuzz.harness.contract_checks',
        'swafuzz.harness.prep_checks',
    ),
    mutants=('swafuzz.features.dense.mutants',),
)
