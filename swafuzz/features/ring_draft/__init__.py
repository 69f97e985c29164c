"""Feature record: the DSpark draft block on a per-request SWA ring.

Semantics: ``swafuzz/features/ring_draft/SEMANTICS.md``. The generic machinery reads this record; see :mod:`swafuzz.features`.
"""

from swafuzz.features.record import Feature, Kind, Since

FEATURE = Feature(
    name='ring_draft',
    title='the DSpark draft block on a per-request SWA ring',
    source='addendum (issue12-ringdraft)',
    kinds=(
        Kind('ring_draft', 'swafuzz.scenarios.ring_draft_kind:ring_draft_strategy',
             'draft_block steps on a ring, eager and graph'),
    ),
    case_fields=(),
    validators=('swafuzz.scenarios.rules.ring_draft:validate',),
    oracle=('swafuzz.oracles.ring_draft',),
    engine=('swafuzz.targets.ring_draft',),
    sglang=('swafuzz.targets.sglang.ring_draft',),
    checks=(),
    mutants=('swafuzz.targets.mutants.ring_draft',),
    since={'sglang': Since('0.5.23',
        'DSpark draft block on a per-request SWA ring')},
    semantics='swafuzz/features/ring_draft/SEMANTICS.md',
)
