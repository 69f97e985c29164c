"""Scenarios: the Case type (the input language) and hypothesis strategies that build valid Cases."""
