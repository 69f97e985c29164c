"""``swafuzz report``: a run directory read back into plain data for the renderers of ``swafuzz.reports``."""
