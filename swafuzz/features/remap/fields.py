"""The step op of mapping re-registration (feature ``remap``); its contract: ``SEMANTICS.md``
beside this file."""

from swafuzz.features.step_op import StepOp

#: ``remap``: the mapping rebuilt (same contents, HiCache load-back / commit) and registered
#: again with both pools; it runs no forward and changes nothing the contract observes
OPS = (
    StepOp('remap', 'the mapping rebuilt and registered again with both pools between forwards',
           after='finish'),
)
