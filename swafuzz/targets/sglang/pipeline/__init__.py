"""The ``sglang`` target's server-level pipeline: a server-level Case
(:mod:`swafuzz.server.case`) run scheduling step by scheduling step through the release's own
scheduler batch, ForwardBatch and backend store (:mod:`.steps`, imports SGLang). Which hops are
the release's code and which are modelled: :data:`.hops.HOPS` (imports nothing).
"""
