"""Server-level Cases (issue 18): server arguments under the release's ``ServerArgs`` names, a
model/pool shape and a request timeline (:mod:`.case`), the schedule they imply
(:mod:`.timeline`), Hypothesis strategies (:mod:`.strategies`), the plain-Python oracle
(:mod:`.oracle`) and one Case's run and verdict (:mod:`.run`). Torch-free; a target's pipeline
(the ``sglang`` target's :mod:`swafuzz.targets.sglang.pipeline`) runs the Case.
"""
