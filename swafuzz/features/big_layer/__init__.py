"""Feature record: SWA layers past 2^31 bytes, the Case's pages placed high by held low pages;
its contract: ``SEMANTICS.md`` beside this file."""

from swafuzz.features.record import Feature, Kind

#: RAM one Case of the kind needs: its two layers past 2^31 bytes (target and draft), the tape
#: executor's saved copy of a layer it writes in place, the process; the most measured (peak RSS
#: of one Case): unified, eager + tape, torch or the Triton interpreter, 6.9 GB; the sglang
#: target (0.5.23) eager 5.1 GB. Not covered: the sglang target's DSV4 Cases under the tape
#: executor peaked at 21.8 GB (the tape snapshots whole storages at capture): run the sglang
#: target with ``--executor eager`` (SEMANTICS.md)
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
