"""The decode side of PD disaggregation's rows of the server-level hop table (hook
``sglang.server_hops``; plain data, printed by ``swafuzz list --target sglang``): ``(ROWS,
OLDER)``, rows as :data:`swafuzz.targets.sglang.pipeline.hops.HOPS` and the 0.5.12 column as its
``OLDER_SHAPE``."""

ROWS = (
    ("PD decode: prealloc queue (DecodePreallocQueue.add, pop_preallocated, _pre_alloc)",
     "real",
     "server_pd_decode: the release's queue (built without its constructor, which builds a "
     "transfer backend's KV manager) with its fake receiver (FakeKVReceiver: add, init, "
     "send_metadata, poll), its budgets and admission, _pre_alloc -> alloc_for_decode_prealloc "
     "-> alloc_extend_swa_tail (the SWA tail, the head's mapping reset) and the SWA window's "
     "transfer pages (translate_swa_indices_for_transfer); a one-rank all-reduce of the polls "
     "(the identity, as the release's single-rank path) and the scheduler's attributes are "
     "stand-ins"),
    ("PD decode: the KV transfer", "modelled",
     "a transfer engine and a prefill server are not run: the prefill's window KV (the Case's "
     "payload) is written into the SWA pages the release sent, as its sender would; the first "
     "output token is the metadata buffer's (the Case's); the transfer queue's "
     "pop_transferred (metadata buffers) is not run"),
    ("PD decode: PREBUILT batch (prepare_for_prebuilt, process_prebuilt, merge_batch)", "real",
     "the release's ScheduleBatch of the transferred requests merged into the running batch; "
     "the overlap relay process_prebuilt stashes into is a recording stand-in"),
)

OLDER = {row[0]: ("refused", "config.disaggregation_mode decode is driven on 0.5.19 .. 0.5.23's "
                  "decode-side shape only (refused naming the field)") for row in ROWS}

HOPS = (ROWS, OLDER)
