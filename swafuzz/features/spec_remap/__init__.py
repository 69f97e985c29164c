"""Feature record: mapping re-registration between speculative forwards (draft and target pools) (the worked example of ``docs/ADDING-A-FEATURE.md``)."""

from swafuzz.features.record import Feature, Kind

FEATURE = Feature(
    name='spec_remap', source='spec §2.1, §2.8, §9.16 (sglang PR #25889)',
    title='mapping re-registration between speculative forwards (draft and target pools)',
    kinds=(Kind('spec_remap', '.kinds:spec_remap_cases',
                'remap steps among verify, draft-extend and multi-step draft forwards'),),
    mutants=('.mutants',),
)
