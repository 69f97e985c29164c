"""oracles package."""
