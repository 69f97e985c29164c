"""An attention-DP rank's decode->extend conversion at server level (issue 26 item 3; imports
SGLang through the rank's pipeline).

After the MLP sync of a step (on the DPSync ranks: the gather, the release's prefill-graph vote
over its ``PrefillCudaGraphRunner.can_replay_locally`` with the Case's captured token counts,
:mod:`.sglang_sync_prefill`), a rank whose batch is a DECODE runs the release's
``maybe_convert_decode_to_extend`` on its own ``ScheduleBatch`` with what the gather gave it
(``is_extend_in_batch``, ``can_run_dp_prefill_cuda_graph``, ``global_num_tokens``; laid on the
batch for the decision and restored after: the ranks' padding stands for the rest), which calls
``ScheduleBatch.convert_decode_to_extend``. A converted batch's ``ForwardBatch`` is then built by
the release from the converted batch (``ForwardBatch.init_new``: extend lengths, prefix lengths,
positions). The record (the rank's ``ServerObs.dispatch[forward]["convert"]``): ``converted``;
for a converted batch the release's ForwardBatch before the ranks' padding - ``extend_seq_lens``,
``prefix_lens``, ``extend_num_tokens``, ``positions``, ``seq_lens``, ``out_cache_loc`` and the
allocator's SWA slot of each location (``swa``).
"""

from __future__ import annotations

from swafuzz.features.dp.sglang_sync_prefill import convert
from swafuzz.targets.sglang.pipeline import seams

#: what the gather lays on the scheduler batch and the conversion reads
GATHERED = ("is_extend_in_batch", "can_run_dp_prefill_cuda_graph", "global_num_tokens")


def decide(pipe, batch, res: dict):
    """The release's conversion of the rank's DECODE ``batch`` after the sync (``res``: the
    DPSync rank's step result): the converted batch's ForwardBatch, or None (not converted)."""
    votes = res["votes"]
    held = {k: getattr(batch, k, None) for k in GATHERED}
    batch.is_extend_in_batch = votes["extend_in_batch"]
    batch.can_run_dp_prefill_cuda_graph = votes["prefill_graph"]
    batch.global_num_tokens = res["gathered"]
    try:
        convert(batch)
    finally:
        for k, v in held.items():
            setattr(batch, k, v)
    converted = batch.forward_mode.is_extend()
    if converted != bool(votes.get("converted")):
        raise RuntimeError(f"the rank's scheduler converted={converted}, its DPSync rank "
                           f"converted={bool(votes.get('converted'))} for the same gather")
    return pipe.forward_batch(batch) if converted else None


def record(pipe, fb) -> dict:
    """The ``convert`` record of a rank's DECODE forward (module docstring); ``fb``: the
    converted batch's ForwardBatch, or None."""
    if fb is None:
        return {"converted": False}
    loc = [int(x) for x in fb.out_cache_loc.tolist()]
    mapping = pipe.srv.allocator.full_to_swa_index_mapping
    return {"converted": True, "extend_seq_lens": [int(x) for x in fb.extend_seq_lens_cpu],
            "prefix_lens": [int(x) for x in fb.extend_prefix_lens_cpu],
            "extend_num_tokens": int(fb.extend_num_tokens),
            "positions": [int(x) for x in fb.positions.tolist()],
            "seq_lens": [int(x) for x in fb.seq_lens.tolist()], "out_cache_loc": loc,
            "swa": [int(mapping[x]) for x in loc]}


def prefix_from_token_list():
    """Server mutant ``server_dp_convert_prefix_from_tokens``: PR #37505 reverted -
    ``convert_decode_to_extend`` derives each request's extend prefix from its token list
    (``len(origin_input_ids) + len(output_ids)`` with the overlap arm's delta 0) instead of the
    batch's ``seq_len - 1``: with the output lag drained (every non-overlap step) the prefix is
    ``seq_len``, the one-token extend's position one past its own KV row."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    real = ScheduleBatch.convert_decode_to_extend

    def convert_decode_to_extend(self):
        real(self)
        self.prefix_lens = [len(r.origin_input_ids) + len(r.output_ids) for r in self.reqs]
    return seams.set_attr(ScheduleBatch, "convert_decode_to_extend", convert_decode_to_extend)
