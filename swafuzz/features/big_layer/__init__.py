"""Feature record: SWA layers past 2^31 bytes, the Case's pages placed high by held low pages;
its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

#: RAM one Case needs (two layers past 2^31 bytes, the tape's copy of one, the process); peak RSS
#: measured: unified eager + tape 6.9 GB, sglang 0.5.23 eager 5.1 GB. Not covered: sglang DSV4
#: Cases under the tape (21.8 GB, whole storages snapshotted): use ``--executor eager``
RAM_BYTES = 9_500_000_000

FEATURE = Feature(
    name='big_layer', source='issue 19 item 4; spec §4.6 (int32 store addressing), §9.8',
    title='SWA layers past 2^31 bytes, the Case\'s pages placed high by held low pages',
    kinds=(Kind('bigaddr', '.kinds:bigaddr_cases', 'layers past 2^31 bytes, rows on both sides '
                'of byte 2^31 (opt-in: GBs of RAM)', ram_bytes=RAM_BYTES),),
    fields='.fields:FIELDS', validators=('.rules:validate',), mutants=('.mutants',),
    oracle=('swafuzz.oracles.allocator',),
    engine=('swafuzz.targets.allocator', 'swafuzz.targets.kv_pool'),
    sglang=('swafuzz.targets.sglang.allocator',),
)
