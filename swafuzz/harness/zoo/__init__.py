"""``swafuzz zoo``: the kill matrix of the mutants and leave-one-out."""
