"""Feature record: radix-cache prefix hits: requests sharing leading pages, refcounted finishes; its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='prefix_share', source='PRs #38519 / #36637, spec §9.15',
    title='radix-cache prefix hits: requests sharing leading pages, refcounted finishes',
    kinds=(Kind('prefix_share', '.kinds:prefix_share_cases',
                'admits with a prefix hit on a live request'),),
    fields='.fields:FIELDS', validators=('.rules:validate',), mutants=('.mutants',),
    oracle=('swafuzz.oracles.sharing',), engine=('swafuzz.targets.sharing',),
)
