"""Executors: the same forward three ways (eager, tape, cudagraph); one interface."""
