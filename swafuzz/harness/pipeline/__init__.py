"""The run pipeline: one Case (execute), the case worker, units, campaigns, the run directory (config, lock, case log, resume), coverage."""
