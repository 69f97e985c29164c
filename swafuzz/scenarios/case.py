"""The Case: swafuzz's input language. Plain data, JSON-serialisable, no tensors.

A Case is a pool configuration, a graph/speculative configuration, a payload seed and a list of
steps. Everything else (slot ids, mapping contents, payload bytes, expected pool bytes) is derived
from it deterministically, so a Case is its own repro bundle on any machine.

Semantics (the contract both ``targets/`` and ``oracles/`` implement, independently)
===================================================================================

Pool (``PoolConfig``)
---------------------
* ``page_size`` P: a power of two, 1..256.
* Full allocator pages ``1..full_pages``; SWA allocator pages ``1..swa_pages``. Page 0 of each is
  the dummy page and is never handed out. Full slot ids are ``page*P + offset``.
* Mapping ``M``: int64, length ``full_pages*P + P + 1``; ``M[f] = 0`` means unmapped; the last
  element is the sentinel ``-1``.
* SWA KV buffers: one per layer, ``[swa_pages + 1, P, row_width]`` of ``row_dtype``; ``layers``
  target layers and ``draft_layers`` draft layers (the draft model's pool: separate tensors,
  the same mapping ``M`` and the same SWA slot ids).
* ``page_pad_bytes`` (default 0; emitted in JSON only when non-zero): each SWA page occupies
  ``P * row_bytes + page_pad_bytes`` bytes (the page stride), its P rows first, then the pad, as
  the real DSV4 pool pads its pages (spec §4.6: page stride ``ceil(584*P/576)*576`` bytes). A
  multiple of the row dtype's item size. The pad bytes are canaries no store may touch; slot
  ``s`` sits at byte ``(s // P) * stride + (s % P) * row_bytes`` of its layer buffer. The pool
  bytes the contract predicts are the rows only, in slot order (pads excluded).
* Before the first step every SWA buffer byte is the poison byte ``0x5A`` (:data:`POISON_BYTE`).
* ``layout`` (default ``"rows"``; emitted in JSON only when not the default): ``"rows"`` is the
  opaque-row pool above. ``"dsv4"`` is the real DeepSeek-V4 SWA cache layout (spec §4.6; the
  byte layout, quantizer and its rounding are documented in :mod:`oracles.dsv4_quant`): it
  needs ``row_width = 512``, ``row_dtype = "bfloat16"`` and no ``page_pad_bytes``. A forward's
  K rows are bf16 ``[rows, 512]`` (448 "nope" values, then 64 rope values) from
  :func:`scenarios.payload.dsv4_rows_bytes`; the store quantizes each row into a 584-byte
  token. A page holds its P tokens' 576-byte data rows (448 fp8 e4m3fn codes, then the 64 rope
  values as bf16), then their 8-byte scale groups (7 UE8M0 tile scales and one pad byte no
  store writes), then canary pad bytes up to the page stride ``ceil(584*P/576)*576``. The pool
  bytes the contract predicts are, per slot in slot order, its 576 data bytes then its 8 scale
  bytes (``row_bytes`` = 584); the scale pad byte keeps the poison byte.

Allocation policy (deterministic; both sides must follow it exactly)
--------------------------------------------------------------------
* Each allocator keeps a set of free pages and always hands out the **lowest-numbered** free page.
  Freed pages go back to the set.
* A request ``rid`` owns an ordered token list ``tokens[rid]`` of full slot ids (position p is
  ``tokens[rid][p]``) and an SWA eviction frontier ``evicted[rid]`` (starts at 0).
* Appending ``n`` tokens to a request ("extend by n"): for each new position p in order: if
  ``p % P != 0`` the token goes to the next offset of the request's last page (full side and SWA
  side alike); else a fresh full page and a fresh SWA page are taken (lowest free) and the token
  sits at offset 0 of each. So ``full % P == swa % P`` always, and ``M[full] = swa``.
  A whole step's allocation is checked first (pages needed on both sides); scenarios only
  generate steps that fit.
* ``free_swa(full_slots)``: the SWA pages ``{M[f] // P for f in full_slots if M[f] > 0}`` are
  released and ``M[f] = 0`` for every f. Pages belong to one request each and callers free
  page-complete ranges (eviction frontiers are page multiples), so no live slot loses its page.
  (A prefix-shared page belongs to all its holders and is never freed while another live
  request holds it: see "Prefix sharing".)
* Releasing a request's full pages: ``{f // P for f in tokens[rid]}`` go back to the free set
  (with prefix sharing: only the pages no other live request holds).

Steps (``Step.op``; fields not listed must be absent or default)
----------------------------------------------------------------
A *forward* writes one row of ``row_width`` elements per query-token row into every layer of one
pool (``target`` pool for admit/decode/verify/idle/dp_decode; ``draft`` pool for draft_extend and
draft_decode). Row r of a forward with real rows ``locs[0..n_real)`` must land at SWA slot
``M[locs[r]]`` (M as of that forward, after the step's allocation). Rows ``r >= n_real`` are
padding: their full location is 0, so they land in SWA slot 0 (dummy page). ``exec`` is
``"eager"`` (no graph: rows = n_real, except dp_decode, see there) or ``"graph"`` (the decode /
verify / draft-extend runner: captured buckets, rows = bucket rows, padded).

* ``admit(rid, length)``: new request ``rid`` with ``length >= 1`` tokens: extend by ``length``;
  then an eager EXTEND forward over those tokens (rows = length, target pool). Always eager.
  With ``prefix_rid`` and ``prefix_len`` n (a radix-cache prefix hit; see "Prefix sharing"
  below): the request's first n tokens are ``tokens[prefix_rid][:n]`` (the same full slots,
  shared), ``evicted[rid] = evicted[prefix_rid]``; then extend by ``length - n`` and the EXTEND
  forward covers only those new tokens (rows = length - n, positions n..length-1).
* ``decode(rids, exec)``: extend each request by 1, in ``rids`` order; DECODE forward with
  ``locs = [new slot of rid for rid in rids]`` (target pool). Graph bucket: smallest bucket
  ``>= len(rids)``; rows = bucket.
* ``verify(rids, exec)``: extend each request by ``num_draft_tokens`` (request by request, in
  ``rids`` order); TARGET_VERIFY forward with ``locs`` = those new slots in that order (target
  pool). Graph bucket over ``len(rids)``; rows = bucket * num_draft_tokens.
  With ``accept`` (one entry per rid, 1 <= a <= num_draft_tokens; absent = every draft token
  accepted, nothing freed): after the forward the rejected draft tokens are freed (EAGLE
  verify, sglang 0.5.12 ``EagleVerifyInput.verify``, chain drafts): request b keeps positions
  ``[0, L + a)`` (L its length before the step); with ``cut = min(ceil((L + a) / P) * P,
  L + num_draft_tokens)`` the rejected slots at positions ``[L + a, cut)`` - the rest of the
  page holding the last accepted token - stay *reserved* (not freed, still mapped; upstream's
  ``align_evict_mask_to_page_size`` keeps that page), and those at ``[cut, L +
  num_draft_tokens)`` (whole pages) are freed: ``free_swa`` of them, then their full pages
  released (P == 1: every rejected slot is freed). The request's next extension continues its
  last page through the reserved slots (same full and SWA slots as before, ``M`` rewritten
  with the same values); freed pages go back to the free sets and later allocations take them
  by the usual policy.
* ``draft_extend(rids, accept, exec)``: no allocation. DRAFT_EXTEND_V2 forward on the draft
  pool with ``locs`` = for each rid (in order) its last ``accept[i]`` tokens (1 <= accept[i] <=
  num_draft_tokens, and <= the request's length). Graph: bucket over ``len(rids)``, rows =
  bucket * num_draft_tokens; real rows are the first ``sum(accept)``, the rest padding.
* ``draft_decode(rids, exec)`` (multi-step draft; needs topk >= 1 and num_steps >= 2): extend
  each request by ``topk * num_steps`` (in ``rids`` order); the new tokens of request b, in
  order, are ``loc[b, k, s]`` for k in range(topk), s in range(num_steps) (k-major). For each
  step ``s < num_steps - 1`` a DECODE forward with speculative step id s writes the draft pool
  with ``locs = [loc[b, k, s] for b for k]`` (bs * topk rows). The last step writes nothing.
  Graph: bucket over ``len(rids)``, rows per step = bucket * topk, padding after the real rows.
* ``idle(tokens, exec)``: an IDLE forward with ``tokens >= 1`` dummy rows, all locations 0
  (target pool). Every row lands in the dummy page. Graph bucket: smallest ``>= tokens``.
* ``dp_decode(rids, rank_tokens, exec)``: data-parallel attention. This rank's requests are
  ``rids`` (possibly empty); the other ranks' token counts are ``rank_tokens`` (1..7 entries).
  Extend each rid by 1; ``padded = max(len(rids), *rank_tokens)``. If rids is empty this rank
  runs IDLE with ``padded`` dummy rows. Eager: metadata is built on the unpadded batch, then
  ``out_cache_loc`` is rebound to a new tensor padded with 0 to ``padded`` rows, and the stores
  write ``padded`` rows. Graph: bucket = smallest ``>= padded``; rows = bucket.
* DP attention on speculative forwards: ``verify``, ``draft_extend`` and ``draft_decode`` may
  carry ``rank_tokens`` (1..7 other ranks' token counts, each >= 0; absent or empty = no DP).
  Let ``w`` be the rows per request of the forward batch (verify and draft_extend:
  ``num_draft_tokens``; draft_decode: ``topk * num_steps``) and ``own`` its rows before padding
  (verify: ``len(rids) * w``; draft_extend: ``sum(accept)``; draft_decode: ``len(rids) * w``).
  The rank pads to ``padded = max(own, *rank_tokens)`` rows, rounded up to a multiple of ``w``
  for verify and draft_decode (fixed-width batches); its batch size becomes
  ``bs = max(len(rids), ceil(padded / w))``. The step allocates exactly as without DP. Eager:
  metadata is built on the unpadded batch, then ``out_cache_loc`` is rebound to a new tensor
  padded with 0 to ``padded`` rows and the stores write ``padded`` rows (draft_decode: the
  padded buffer is ``[bs, topk, num_steps]`` with the padded requests' locations 0, so each step
  forward writes ``bs * topk`` rows). Graph: bucket = smallest ``>= bs``; rows = bucket * w
  (draft_decode: bucket * topk per step). Real rows come first, padding after them (spec §5.4).
* ``dp_extend`` (a flag on ``dp_decode``, ``verify`` and ``draft_extend`` with ``rank_tokens``
  and at least one rid): another rank is extending under MAX_LEN, so this rank's batch is
  rewritten to EXTEND (spec §5.4 (3); the original mode is stashed): the forward runs eagerly
  whatever ``exec`` says (no graph runs EXTEND; ``exec == "graph"`` needs no bucket then), its
  ForwardMode is ``EXTEND``, and it is padded as the eager DP path above (dp_decode:
  ``padded = max(len(rids), *rank_tokens)``).
* ``evict(rid)``: window eviction: ``frontier = max(evicted[rid], len(tokens[rid]) - window)``
  floored to a multiple of P; if it advanced, ``free_swa(tokens[rid][evicted:frontier])`` and
  ``evicted[rid] = frontier``. No forward.
* ``finish(rid)``: ``free_swa`` of all still-mapped tokens, then the request's full pages are
  released; the request is gone. No forward. (With prefix sharing: see below.)
* ``remap()``: the mapping is rewritten (with the same contents) and registered again with both
  pools (HiCache load-back / commit, spec §2.8, sglang PR #25889); every later allocation and
  translation - eager or inside graphs captured before the step - must use the live mapping,
  which draft and target share (spec §2.1). No state change, no forward.

Prefix sharing (``admit`` with ``prefix_rid`` / ``prefix_len``)
-------------------------------------------------------------
A radix-cache prefix hit (sglang ``SWARadixCache``): the new request reuses the first n full
slots of a live request instead of allocating and computing them. Rules:

* ``1 <= n < length``, ``n <= len(tokens[prefix_rid])``, n a multiple of P (the radix cache
  matches page-aligned keys when P > 1), so the new tokens start a fresh page and a partly
  filled page is never shared. The prefix's SWA window must be live: ``evicted[prefix_rid] ==
  0`` or ``n - evicted[prefix_rid] >= window`` (``SWARadixCache._match_prefix_helper`` matches
  a prefix only if it is connected to the root without an SWA tombstone or has at least
  ``sliding_window_size`` tokens since the last one). The new request's frontier starts at
  ``evicted[prefix_rid]`` (shared positions below it are evicted prefix tokens).
* A full page is *held* by every live request whose token list contains one of its slots
  (the radix tree's lock reference, ``inc_lock_ref`` / ``dec_lock_ref``). A held page is never
  released while another live request holds it, and its SWA slots stay mapped.
* ``evict(rid)``: as above, but the ``free_swa`` skips tokens on pages another live request
  holds (the frontier still advances; upstream: a request never frees below its
  ``cache_protected_len``, the tree owns those tokens).
* ``finish(rid)``: ``free_swa`` of every slot of the pages no other live request holds (the
  request's reserved verify slots included), then those full pages are released. Then, for
  every other live request r, its tokens below ``evicted[r]`` on pages r now holds alone are
  ``free_swa``'d (the deferred eviction of tokens its earlier ``evict`` skipped: the tree
  tombstones an unlocked node's out-of-window SWA).
Request window, encoder replay and late-layer tail (V4.1; addendum §2.2-§2.4, issue 12)
-------------------------------------------------------------------------------------
Pool fields (all default 0 = off, emitted in JSON only when non-zero). ``W`` below is
``pool.window`` (the SWA window: 128 upstream) used as the history length per run and the
tail length.

* ``request_window`` C > 0: the target pool is a V4.1 *request-window* pool. Ring capacity
  ``cap = ceil(C / P) * P`` (needs ``cap >= W``); ``window_slots`` S >= 1 request slots
  ``1..S`` (slot 0 is the padding slot). Per target layer a ring of ``R = (S + 1) * cap + P``
  rows (row ``s * cap + q`` holds a position ``q' = q mod cap`` of slot s; ``Z = (S + 1) * cap``
  is the zero row), all bytes ``POISON_BYTE`` except the last page ``[Z, Z + P)``, which is
  ``0x00``; ``tags[layer][row]`` (int, the position a ring row holds) all ``-1``. One
  single-layer *workspace* of ``WS = ceil(((S + 1) * W + window_chunk) / P) * P`` rows, all
  ``POISON_BYTE``. A request takes the lowest free slot at ``admit`` (that slot's tags are
  reset to ``-1`` in every layer first: a new slot starts its window) and frees it at
  ``finish``. Under a window the paged SWA pool is never written by the target's forwards
  (the allocator and ``M`` still run as above; they stay observable and checked).
  Allowed ops: ``admit``, ``extend``, ``decode`` (eager), ``idle`` (eager),
  ``dp_decode`` with no rids (an idle DP rank, eager) or with rids (a DP decode rank, no
  ``dp_extend``: see "DP decode ranks" below), ``evict``, ``finish``; others are
  infeasible. (Also ``verify`` and DP-padded EXTENDs: see "DSpark target verify and
  DP-padded EXTEND" below.) ``graph.topk > 0`` (MTP) makes an eager IDLE skip its metadata init.
* ``late_layer_start`` L > 0 (``L < layers``): target layers ``>= L`` are *late layers*: in
  an EXTEND forward (``admit``, ``extend``) they run only each request's tail, its last
  ``min(W, n_b)`` rows (``n_b``: the request's rows in this forward), read floor
  ``max(0, seq_b - W)`` (``seq_b``: its length after the step). Other forwards are unchanged.
  With no window (paged pool) tail rows land at ``M[loc]`` of their rows; ``dp_extend`` is
  infeasible with a tail.

Window forward (every target forward under a window, in batch order): rows
``i = 0..n-1`` with (slot, position, floor); ``G`` = requests in the batch (IDLE: 1).
Layout: *runs* are maximal blocks of consecutive rows with the same slot (run g's first
position ``f_g``); ``write_loc[i] = G * W + i`` (a workspace row); history row
``h = g * W + j`` (j < W) stands for position ``p = f_g - W + j``, *valid* iff ``p >= 0`` and
``p >= floor`` of the run's first row, and is copied from ring row ``slot_g * cap + p mod
cap`` (``Z`` when invalid; groups with no run copy ``Z``); ``commit[i]`` iff row i is among the
last ``cap`` rows of its run; ``size = G * W + n``. A forward whose ``size > WS`` is *refused*:
the run stops with an error at that step (nothing of it is observed). Per target layer, in
order: (1) workspace history rows ``[0, G * W)`` <- their ring rows; (2) workspace row
``write_loc[i]`` <- K row i; (3) unless IDLE: for each committed row i in order, ring row
``slot_i * cap + pos_i mod cap`` <- workspace row ``write_loc[i]`` and its tag <- ``pos_i``.
Late layers of an EXTEND forward do the same with the *tail layout* (the tail rows only, the
same ``G``, their floors). Eager IDLE (``idle``, ``dp_decode`` with no rids: ``padded``
rows) uses the idle layout: ``n`` rows of slot 0, position 0, ``G = 1``: writes
``[W, W + n)``, history all ``Z``, commits nothing.

* ``extend(rids, lengths, replay)``: needs a window or a tail. Extends each rid by its
  ``lengths[b] >= 1`` (in rids order); one eager EXTEND forward over the new rows (target
  pool). ``replay`` (window only): rids whose window is reset first (their slot's tags ->
  ``-1`` in every layer) and whose last ``r = min(Pq, W)`` cached tokens are replayed
  (encoder SWA bounded replay, 0.5.23 fold): ``Pq`` = the request's length before the step
  (must be even and >= 2); its ``r`` rows at positions ``Pq - r .. Pq - 1`` (full locations
  its existing tokens there) are prepended to its new rows, and every row of that request
  gets floor ``Pq - r`` (others: floor 0).

Payload: K rows of window forwards are ``rows_bytes(seed, step, fwd, "target", layer, n)``
with ``n`` = the rows that layer stores (the tail's rows for a late layer).

DECODE graphs under a request window (addendum §3 I (window), §4 decode bucket, §5 W6/W7):
``decode``, ``idle`` and ``dp_decode`` (no rids) may also have ``exec: "graph"`` under a
window. With an executor that captures graphs (tape, cudagraph) such a step whose batch ``b``
(``len(rids)``, ``tokens``, ``max(rank_tokens)``) fits a bucket runs through the DECODE graph of
the smallest bucket ``B >= b`` (else, and with the eager executor, eagerly as above). The
bucket's layout is built in the graph from its ``B`` rows with ``G = B`` (one group per row):
rows ``0..b-1`` are the decode rows, rows ``b..B-1`` are padding with slot 0, position 0
(seq_lens fill 1); an IDLE step's rows are all slot 0, position 0. The graph's commit has no
IDLE guard: every forward through it (IDLE included) commits its committed rows, so padding
and IDLE rows commit only into slot-0 ring rows (tag 0 at ring row 0). The first use of a
bucket captures it: its warm-up runs the capture state (``B`` rows of slot 0, position 0) once,
so slot-0 ring row 0 gets tag 0 in every layer. Slot 0's ring bytes are unspecified (several
rows commit to one ring row; slot 0 is never read); its tags are not. A bucket with
``B * W + B > WS`` makes the Case invalid. Every replay of one bucket uses the same layout
object, of size ``B * W + B`` (W7). K rows: ``rows_bytes(seed, step, 0, "target", layer, B)``.

DP decode ranks under a request window (0.5.23: the MLP-sync MAX_LEN padding runs before the
metadata init): ``dp_decode`` with rids is one DECODE forward of ``D = max(len(rids),
*rank_tokens)`` rows: the decode rows, then ``D - len(rids)`` padding rows of slot 0, position
0 (seq_lens fill 1), one group per row (``G = D``); it commits like any DECODE, so padding rows
commit into slot 0. With ``exec: "graph"`` under a graph executor those ``D`` rows are the
batch of the DECODE graph above (bucket ``>= D``).

Prefill graphs under a request window (addendum §4 "Breakable prefill graphs", §5 W3/W6/W7;
0.5.23 ``init_forward_metadata_prefill`` with ``use_prefill_cuda_graph``, ``window_layout(...,
padded_rows=)``, ``refresh_for_breakable_cuda_graph_replay_``): ``graph.prefill_buckets`` (a
strictly increasing tuple of token counts >= 1, default empty = no prefill graph; emitted in
JSON only when non-empty) are the captured token buckets of the breakable prefill graph.
``admit`` (no prefix) and ``extend`` may carry ``exec: "graph"`` (emitted in JSON only then)
when ``pool.request_window > 0`` and ``pool.late_layer_start == 0`` (a tail under a prefill
graph is not modelled: CaseError; nor is one with ``pool.separate_replay``). With an executor that captures graphs (tape, cudagraph)
such a step of ``n`` forward rows (the folded encoder replay rows included) runs through the
prefill graph of the smallest bucket ``T >= n`` if ``T <= 2 * n`` (upstream's padding factor
``_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR``); otherwise, and with the eager executor, eagerly as
above. The graph's layout:

* ``G = min(S + 1, T)`` groups (one per request slot, at most one per row); rows ``0..n-1``
  are the forward's rows with their slots, positions and floors (runs, history rows, validity
  and commit mask as in "Window forward", computed over these live rows only); rows
  ``n..T-1`` are padding: ``write_loc = G * W + i``, no group, never committed
  (``request_window_live_rows``); ``size = G * W + T``. A bucket with ``G * W + T > WS`` makes
  the Case invalid (the capture fails).
* It is a breakable graph: per target layer one captured segment (history rows ``[0, G * W)``
  <- their ring rows; the store of the ``T`` K rows at ``write_loc``) and an eager break after
  it (attention, then the commit of the live committed rows, as in "Window forward").
* The first use of a bucket captures it: its warm-up runs the capture state, one request of
  slot 0 at positions ``0..T-1`` (no padding), once; so slot 0's ring rows of the positions
  ``max(0, T - cap)..T-1`` get those positions as tags in every layer (slot 0's ring bytes stay
  unspecified, as for DECODE graphs).
* Every replay of a bucket uses the one layout object its capture built, refreshed in place
  from the live batch before the replay (W7: identity and ``size`` constant per bucket).
* K rows: ``rows_bytes(seed, step, 0, "target", layer, T)``.
Prefix hits on the V4.1 path, compressor locations, separate replay (addendum §2.3, §2.4, §5
T5/E1/E2, §6 A13; issue 12 item 2)
-------------------------------------------------------------------------------------------
* ``admit`` with ``prefix_rid`` / ``prefix_len`` n on a pool with a window or a tail (the
  "Prefix sharing" rules otherwise hold). With a late-layer tail the radix match is capped at
  ``length - W`` tokens (sglang 0.5.23 ``UnifiedRadixCache.swa_reprefill_tail_tokens`` = the
  sliding window, applied by ``_req_radix_key`` as the key's limit; the tree matches whole
  pages): the hit is ``h = min(n, floor((length - W) / P) * P)`` (``h = 0`` when ``length <=
  W``), so the last ``length - h >= min(W, length)`` tokens are re-prefilled and every row a
  late layer reads was written by that layer (T5). Without a tail ``h = n``. ``h = 0`` is a
  plain admit; otherwise the request shares ``tokens[prefix_rid][:h]`` (the SWA-live rule of
  "Prefix sharing" applies to h) and the EXTEND forward covers positions ``h..length-1``.
  Under a window the request takes a fresh slot (reset) and, when ``h > 0``, is an encoder
  replay hit: ``h`` must be even (else infeasible: the release refuses an odd boundary), its
  ``r = min(h, W)`` rows at positions ``h - r .. h - 1`` (full locations: the shared tokens
  there) are replayed as for ``extend``'s ``replay``, with floor ``h - r``.
* Compressor locations (observed on every EXTEND forward of the window / tail path): per row
  of the forward, in batch order, ``compress`` (int64, sglang's ``out_cache_loc`` dtype) is the
  location the compressors write (0.5.23 ``DeepseekV4AttnBackend._compressor_out_loc``): ``0``
  for a replay row folded into the extend (its main KV, compressed groups and index keys are
  already cached), the row's full location otherwise; ``c4`` (int64) is the ratio-4
  compressor's slot (0.5.23 ``init_compression_metadata``): ``compress // 4`` when
  ``(pos + 1) % 4 == 0``, else 0; ``low_ratio`` says whether the ratio-1/2 source
  compressors run: false only for a separate replay forward (``forward_low_ratio_sources``).
* ``pool.separate_replay`` (0 = fold, the 0.5.23 CUDA default; 1 = separate: 0.5.21 / 0.5.22
  and 0.5.23 ROCm ``run_encoder_swa_replay``; needs a window; emitted in JSON only when 1):
  a step with replay hits (``extend`` with ``replay``, a prefix admit with ``h > 0``) resets
  the hit slots, then runs one replay EXTEND forward (forward index 0) over the hit requests
  only, in batch order: each hit's ``r`` rows at positions ``Pq - r .. Pq - 1`` (``Pq``: its
  cached length; full locations: ``tokens[rid][Pq - r:Pq]``, already cached: nothing is
  allocated), floor ``Pq - r`` for its rows (each run floored at its own start), ``G`` = hit
  requests, compressor locations = those full locations, ``low_ratio`` false; it commits like
  any EXTEND and its late layers run its tail (its last ``min(W, r)`` rows). Then the
  scheduled EXTEND forward (forward index 1) covers only the new rows, floor 0, ``G =
  len(rids)`` (admit: 1). Payload of forward f: ``rows_bytes(seed, step, f, ...)``. A step
  with no hit runs one forward (index 0) as before.

Late-layer tail under graphs (addendum §2.4, §3 T, §4, §5 T1/T4, §6 A3/A9; sglang 0.5.22
prefill-graph tail, 0.5.23 ``DecoderReplayTail`` row-bucket graphs); needs
``pool.late_layer_start > 0``. ``graph.tail_buckets`` (default empty; emitted in JSON only when
set): strictly increasing row counts of the tail's row-bucket graphs (upstream multiples of the
window). ``graph.tail_capacity`` (default 0; emitted only when set): rows of the prefill-graph
tail's persistent location buffer (upstream ``max_running_requests * 128``). A step's
``tail_exec`` (default ``""``: the late layers run eagerly, as above; emitted only when set):

* ``"bucket"`` on ``extend``: the late layers run through the row-bucket tail graph of the
  smallest bucket ``T >= t`` (``t`` = the tail's rows; no bucket fits: eagerly). The graph's
  static rows are padded to ``T``; its store (an eager break) takes the K rows sliced to the
  real rows ``t`` and the tail's ``t`` locations (A3: K rows == locations), so every store
  writes what the eager tail writes. Every executor runs it (the model holds no captured store).
  With ``rank_tokens`` (1..7 other DP ranks' tail rows, >= 0; DP attention): every rank
  replays the largest rank's bucket, the smallest ``T >= max(t, *rank_tokens)``; the store
  still takes this rank's ``t`` real rows.
* ``"prefill"`` on ``extend`` (paged pool only, needs ``graph.tail_capacity >= t``): the late
  layers run inside the prefill graph over the whole capacity-sized block: the store receives
  ``tail_capacity`` int32 locations, the real rows' SWA slots ``M[loc]`` first, then ``0`` for
  every row past ``t`` (``real_rows_count``; T1), and ``tail_capacity`` K rows
  (``rows_bytes(..., tail_capacity)``): padding rows land in the dummy page.
* ``"bucket"`` on ``dp_decode`` with no rids (request-window pool only): an IDLE DP rank while
  a peer extends: its early layers are the eager IDLE forward above (``max(rank_tokens)`` rows);
  its late layers replay the peer's tail bucket (smallest ``T >= max(rank_tokens)``; none fits:
  no tail graph, the late layers run the eager IDLE forward) with no rows of its own: no store,
  and nothing is committed (A9: the batch relabelled EXTEND inside the tail graph must still
  commit nothing, W6).

T4 (observable): after the late layers of every EXTEND forward with a tail leave the tail
(``exit``), a store would resolve the forward's own locations again (window: the full layout's
``write_loc``; paged: ``M[loc]`` of every row of the forward) and the forward batch's
non-padded row count is the forward's row count again.

DSpark target verify and DP-padded EXTEND under a request window (issue 12 item 2; addendum §4
"DSpark target verify", "DP"; :mod:`oracles.dspark`, :mod:`targets.dspark`)
------------------------------------------------------------------------------------------
* ``verify(rids, accept, exec)`` under a window (``rank_tokens`` and ``dp_extend`` make it
  infeasible: sglang's early verify metadata is off under DP attention; so does a ring
  capacity ``cap < W + T``: sglang sizes it ``128 + MTP draft tokens``, and a smaller ring
  lets committed draft rows overwrite positions still in the window): extend each rid by ``num_draft_tokens`` (``T``), request by
  request, as above; one TARGET_VERIFY window forward over the new rows, request by request:
  ``(slot, L_b + j, floor 0)`` for ``j < T`` (``L_b`` the request's length before the step).
  Groups ``G = len(rids)`` (sglang ``num_groups = bs``: one group per request, each request one
  run of ``T`` rows). The forward commits like any non-IDLE window forward (the last ``cap``
  rows of each run; sglang's commit skips only IDLE and the DSpark draft backend), so draft
  rows are committed before the accept is known. With ``accept`` the rejected draft tokens are
  freed afterwards exactly as on a paged pool; the ring and its tags keep the committed rows
  (a later forward of the request overwrites them at the same ring rows). The verify metadata
  carries no SWA location of its own under a window (``swa_out_cache_loc = None``, what
  sglang 0.5.23's early-verify install leaves): the resolver's W branch supplies the workspace
  rows. K rows: ``rows_bytes(seed, step, 0, "target", layer, len(rids) * T)``.
  ``exec: "graph"`` (the DSpark TARGET_VERIFY graph with early metadata): with an executor
  that captures graphs, a verify whose batch fits a bucket runs through the graph of the
  smallest bucket ``B >= len(rids)`` (else, and with the eager executor, eagerly as above).
  Only ``B == len(rids)`` is modelled (a larger bucket or ``B * W + B * T > WS`` make the
  Case infeasible): the metadata of the batch's rows is built outside the graph with
  ``G = B`` and copied into the bucket's captured metadata, so the forward is the eager one.
  The first use of a bucket captures it: its warm-up runs the capture state (``B`` requests
  of slot 0 at positions ``1..T``, ``seq_lens`` fill 1) with a commit, so slot-0 ring rows
  ``p mod cap`` get tag ``p`` (``p = 1..T``) in every layer. Every replay of a bucket uses the
  same layout object, of size ``B * W + B * T`` (W7).
* DP-padded EXTEND (MLP-sync MAX_LEN padding, the mode sglang uses for an extend-in-batch step
  whose prefill graph bucket fits or whose MoE all-to-all needs equal rows; SUM_LEN pads an
  extend to its own row count, i.e. not at all, so it needs no field): ``extend`` with
  ``rank_tokens`` (1..7 other ranks' token counts) and ``dp_decode`` with ``dp_extend`` (a
  decode rank rewritten to a one-token-per-request EXTEND). The forward's real rows are those
  of the plain ``extend`` (replay rows included) / one row per rid; ``D = max(real rows,
  *rank_tokens)``; ``D - real`` padding rows follow them (full location 0). Padding rows
  belong to no run (W3: a padding row never extends a real run): layout as for the real rows
  with ``G`` = requests of the batch, then each padding row k gets workspace row
  ``G * W + real + k``, no history, commit mask false; ``size = G * W + D`` (refused above the
  workspace, A7). The forward commits the real rows only. K rows: ``rows_bytes(seed, step, 0,
  "target", layer, D)``. Not with a late-layer tail (infeasible). (``rank_tokens`` on an
  ``extend`` with ``tail_exec: "bucket"`` mean the peers' tail rows instead: see "Late-layer
  tail under graphs".)

Payload
-------
The K rows of a forward are derived by :func:`scenarios.payload.rows_bytes` from
``(payload_seed, step index, forward index within the step, pool, layer)``; padded rows carry
bytes too (they land in the dummy page, which is never compared). Layout ``"dsv4"``: by
:func:`scenarios.payload.dsv4_rows_bytes` from the same key (finite bf16 values).

Graph configuration (``GraphConfig``)
-------------------------------------
``buckets``: strictly increasing captured batch sizes (>= 1). ``topk`` (0 = no MTP),
``num_steps`` (>= 1), ``num_draft_tokens`` (>= 1). ``prep_in_graph`` (default false;
``SGLANG_PREP_IN_CUDA_GRAPH``): every attention backend builds Raw metadata (the raw inputs only,
no core attention metadata) and upgrades it inside the forward / the captured graph (spec §4.1,
§4.3); a runner that runs no in-graph init (the draft-extend graph, §5.2) and an eager MTP IDLE
forward after a graph replay leave Raw metadata in place when the stores resolve their
locations (§4.5: Raw metadata has no cached location, so the live translation is used). Nothing
the contract observes changes: every forward writes what it writes without it. Emitted in JSON
only when true. ``draft_extend_buffer`` (default false; sglang PR #34890): the draft-extend
backend owns a pre-allocated int32 SWA location buffer of ``max(buckets) * num_draft_tokens``
entries; the draft-extend graph's out-graph prep (outside the graph, before capture and every
replay) refills it - the first ``n`` entries (n = the forward's live location count) with
``M[loc]``, every entry after them with 0 - and stamps its first ``n`` entries on the metadata,
so the captured stores read the buffer instead of translating (spec §4.7). Nothing the
contract observes changes. Emitted in JSON only when true.

Per-request SWA ring (``pool.swa_ring`` R > 0, ``pool.req_slots`` S > 0; addendum §1, §2.1)
------------------------------------------------------------------------------------------
Both fields default to 0 (off) and appear in JSON only when set; they are set together. With a
ring, SWA KV is addressed by request slot instead of through ``M`` (sglang 0.5.20+
``BaseSWAKVPool.swa_req_ring_size``: the HIP unified-KV target pool, the CUDA DSpark draft pool;
here both pools of the Case are rings, each its own storage). Rules that replace the paged ones:

* Request slots (``ReqToTokenPool``): slots ``1..S`` are free at the start; slot 0 is the
  padding row and is never given to a request. ``admit`` takes a free slot before allocating
  (exact mode: the lowest free slot; observed mode: the target's choice, validated as free and
  in ``1..S``; sglang pops the highest); ``finish`` returns it. At most S live requests.
* SWA storage per layer: ``(S + 1) * R`` ring rows, laid out as pages of P rows
  (``ceil((S+1)*R / P)`` pages, the last one's tail rows unused); request slot ``s`` owns rows
  ``[s*R, (s+1)*R)``. ``swa_slots`` counts every row of those pages. Requires ``R >= window``
  and ``R >= P`` (so slot 0's rows cover page 0, the rows no check compares).
* Allocation pages the full side only (lowest free full page, as above); ``M`` is never written
  or read for a ring write (stays all 0 with its ``-1`` sentinel); the paged SWA allocator
  (``swa_pages``) is never drawn from. ``evict`` moves the frontier and frees nothing;
  ``finish`` releases the full pages and the request slot.
* Write rows: real row r of a forward belongs to request ``rid`` (slot ``s``) at position ``p``;
  with ``f = len(tokens[rid]) - 1`` (after the step's allocation) its ring row is ``-1`` (a
  skipped row: not written) when ``p <= f - window``, else ``s*R + p mod R`` (sglang
  ``swa_ring_rows``; the ``-1`` window rule of the DSpark target-hidden injection
  ``_ring_inject_loc``, applied to every forward). Padding rows and IDLE rows resolve to row 0
  (slot 0, position 0). Rows are int32; the store skips ``-1`` rows (the fused norm-rope
  store's ``out_loc < 0`` guard) and every other row lands at its ring row.
* Allocator accounting (sglang ``SWATokenToKVPoolAllocator`` in ring mode), exposed after every
  step: ``available`` = free full pages * P; ``swa_available`` = free request slots *
  ``ceil(R/P)*P``; the paged SWA counter never exceeds its size (``swa_pages * P``).
* Not with a ring: ``draft_decode`` steps and ``graph.draft_extend_buffer`` (CaseError; the
  message says which release code shows the combination is not run: see "DSpark draft block on
  a ring" below).

DSpark draft block on a ring (``draft_block``; addendum §2.1, §4 "DSpark target verify / draft
block"; issue 12)
---------------------------------------------------------------------------------------------
In sglang 0.5.23 the draft model that owns a per-request SWA ring is DSpark's
(``uses_draft_swa_ring``: encoder replay, which V4.1 admits only with DSpark). It runs no
multi-step DECODE and no DRAFT_EXTEND forward: per round it runs one *draft block*, a
TARGET_VERIFY-mode forward on the draft model whose SWA write rows are stamped from the request
slot and the block's positions (``_dspark_swa_ring_out_cache_loc``), never from ``M``.

* ``draft_block(rids, exec)``: needs a ring, ``graph.num_draft_tokens >= 2`` and ``pool.swa_ring
  >= window + gamma`` with block size ``gamma = num_draft_tokens - 1`` (upstream asserts the
  block size is ``speculative_num_draft_tokens - 1``; the draft ring is sized
  ``ceil((window + draft tokens) / P) * P``, so a block never overwrites an in-window row).
  No allocation; request state is unchanged. One forward on the draft pool with ``gamma`` rows
  per request, in ``rids`` order: row ``i`` of request ``rid`` (slot ``s``, length ``L =
  len(tokens[rid])``) sits at position ``L + i`` (``seq_lens_casual - 1`` with
  ``seq_lens_casual = L + i + 1``), carries the full location ``tokens[rid][-1]`` (the anchor
  token the block starts from; the row's location plays no part in its ring row), and lands at
  ring row ``s*R + (L + i) mod R``. No ``-1`` window rule (every block row is ahead of the
  committed window). ``exec: "graph"`` (upstream: the draft model's decode graph runner,
  whose in-graph op re-stamps the rows on every replay) needs ``gamma < page_size``: with an
  executor that captures graphs the block runs through the TARGET_VERIFY graph of the smallest
  bucket ``B >= len(rids)``, ``B * gamma`` rows, real rows first; each padded request has
  slot 0 and length 1 (the seq_lens fill), so its rows land at slot 0's rows ``1..gamma``, in
  page 0, never compared (the capture's warm-up writes the same rows). A graph block with no
  fitting bucket makes the Case invalid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

CASE_VERSION = 1
POISON_BYTE = 0x5A

ROW_DTYPES = ("uint8", "bfloat16")
LAYOUTS = ("rows", "dsv4")
DSV4_TOKEN_BYTES = 584  # 448 fp8 nope + 64 bf16 rope + 7 UE8M0 scales + 1 pad
DSV4_PAGE_ALIGN = 576
ROW_ITEMSIZE = {"uint8": 1, "bfloat16": 2}
EXECS = ("eager", "graph")
#: ``Step.tail_exec`` values (empty: the late layers run eagerly)
TAIL_EXECS = ("bucket", "prefill")
OPS = (
    "admit",
    "decode",
    "verify",
    "draft_extend",
    "draft_decode",
    "idle",
    "dp_decode",
    "evict",
    "finish",
    "remap",
    "extend",
    "draft_block",
)
FORWARD_OPS = ("admit", "decode", "verify", "draft_extend", "draft_decode", "idle", "dp_decode",
               "extend", "draft_block")
#: PoolConfig fields emitted in JSON only when non-zero (older bundles stay byte-identical)
OPTIONAL_POOL_FIELDS = ("page_pad_bytes", "request_window", "window_slots", "window_chunk",
                        "late_layer_start", "swa_ring", "req_slots", "separate_replay")


class CaseError(ValueError):
    """A malformed Case. The message names the field (a dotted path) and what is allowed."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class PoolConfig:
    page_size: int = 1
    full_pages: int = 8
    swa_pages: int = 8
    window: int = 4
    layers: int = 1
    draft_layers: int = 1
    row_width: int = 4
    row_dtype: str = "uint8"
    page_pad_bytes: int = 0
    layout: str = "rows"
    request_window: int = 0  # ring capacity per request slot (0: paged SWA pool)
    window_slots: int = 0  # request slots 1..window_slots (window only)
    window_chunk: int = 0  # workspace rows past (window_slots + 1) * window
    late_layer_start: int = 0  # first late (tail-only) target layer (0: no tail)
    swa_ring: int = 0  # ring rows per request slot (0: paged SWA, no ring)
    req_slots: int = 0  # request slots 1..req_slots with a ring (slot 0 is padding)
    separate_replay: int = 0  # 1: encoder replay as a separate EXTEND forward (0: fold)

    @property
    def ring_rows(self) -> int:
        """Ring rows of one SWA layer buffer, slot 0 included (0 without a ring)."""
        return (self.req_slots + 1) * self.swa_ring if self.swa_ring else 0

    @property
    def swa_buffer_pages(self) -> int:
        """Pages of one SWA layer buffer, dummy page included: ``swa_pages + 1``, or with a ring
        ``ceil(ring_rows / P)``."""
        if self.swa_ring:
            return -(-self.ring_rows // self.page_size)
        return self.swa_pages + 1

    @property
    def row_bytes(self) -> int:
        """Bytes of one slot in the pool bytes: the row (``"rows"``), the 584-byte token
        (``"dsv4"``)."""
        if self.layout == "dsv4":
            return DSV4_TOKEN_BYTES
        return self.row_width * ROW_ITEMSIZE[self.row_dtype]

    @property
    def k_row_bytes(self) -> int:
        """Bytes of one K row handed to the store (``row_width`` of ``row_dtype``)."""
        return self.row_width * ROW_ITEMSIZE[self.row_dtype]

    @property
    def page_stride_bytes(self) -> int:
        """Bytes from one SWA page to the next: ``P * row_bytes + page_pad_bytes``; layout
        ``"dsv4"``: ``ceil(584 * P / 576) * 576``."""
        if self.layout == "dsv4":
            return -(-DSV4_TOKEN_BYTES * self.page_size // DSV4_PAGE_ALIGN) * DSV4_PAGE_ALIGN
        return self.page_size * self.row_bytes + self.page_pad_bytes

    @property
    def pad_bytes_per_page(self) -> int:
        """Canary bytes after each page's slots: ``page_stride_bytes - P * row_bytes``."""
        return self.page_stride_bytes - self.page_size * self.row_bytes

    @property
    def mapping_len(self) -> int:
        return self.full_pages * self.page_size + self.page_size + 1

    @property
    def swa_slots(self) -> int:
        """Slots (ring: rows) per SWA layer buffer, dummy page included."""
        return self.swa_buffer_pages * self.page_size


@dataclass(frozen=True)
class GraphConfig:
    buckets: tuple[int, ...] = (1, 2, 4, 8)
    topk: int = 0
    num_steps: int = 1
    num_draft_tokens: int = 1
    prep_in_graph: bool = False
    draft_extend_buffer: bool = False
    prefill_buckets: tuple[int, ...] = ()  # breakable prefill graph token buckets (issue 12)
    tail_buckets: tuple[int, ...] = ()  # row buckets of the late-layer tail graphs
    tail_capacity: int = 0  # rows of the prefill-graph tail's location buffer (0: none)

    def bucket_for(self, n: int) -> int | None:
        for b in self.buckets:
            if b >= n:
                return b
        return None


@dataclass(frozen=True)
class Step:
    op: str
    rid: int | None = None
    length: int | None = None
    rids: tuple[int, ...] = ()
    accept: tuple[int, ...] = ()
    tokens: int | None = None
    rank_tokens: tuple[int, ...] = ()
    exec: str = "eager"
    dp_extend: bool = False
    prefix_rid: int | None = None  # admit: radix-cache prefix hit on this live request
    prefix_len: int | None = None  # admit: shared leading tokens of prefix_rid
    lengths: tuple[int, ...] = ()
    replay: tuple[int, ...] = ()
    tail_exec: str = ""  # late layers: "" eager, "bucket" row-bucket graph, "prefill" graph

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op}
        for k in ("rid", "length", "tokens", "prefix_rid", "prefix_len"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        for k in ("rids", "accept", "rank_tokens", "lengths", "replay"):
            v = getattr(self, k)
            if v:
                d[k] = list(v)
        if self.op in FORWARD_OPS and self.op not in ("admit", "extend"):
            d["exec"] = self.exec
        elif self.op in ("admit", "extend") and self.exec != "eager":
            d["exec"] = self.exec  # a prefill graph under a request window (issue 12)
        if self.op == "dp_decode":
            d["rids"] = list(self.rids)
        if self.dp_extend:
            d["dp_extend"] = True
        if self.tail_exec:
            d["tail_exec"] = self.tail_exec
        return d


@dataclass(frozen=True)
class Case:
    pool: PoolConfig = field(default_factory=PoolConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    steps: tuple[Step, ...] = ()
    payload_seed: int = 0
    kind: str = "custom"  # the scenario kind that generated it (for reports/dedup only)

    # ------------------------------------------------------------------ json
    def to_json(self) -> dict[str, Any]:
        return {
            "version": CASE_VERSION,
            "kind": self.kind,
            "pool": {k: v for k, v in asdict(self.pool).items()
                     if (k not in OPTIONAL_POOL_FIELDS or v) and (k != "layout" or v != "rows")},
            "graph": {**{k: v for k, v in asdict(self.graph).items()
                         if k not in ("prep_in_graph", "draft_extend_buffer", "prefill_buckets",
                                      "tail_buckets", "tail_capacity") or v},
                      "buckets": list(self.graph.buckets),
                      **({"prefill_buckets": list(self.graph.prefill_buckets)}
                         if self.graph.prefill_buckets else {}),
                      **({"tail_buckets": list(self.graph.tail_buckets)}
                         if self.graph.tail_buckets else {})},
            "payload_seed": self.payload_seed,
            "steps": [s.to_json() for s in self.steps],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(obj: Any) -> Case:
        """Parse and validate; raises :class:`CaseError` naming the offending field."""
        from swafuzz.scenarios.validate import parse_case

        return parse_case(obj)

    @staticmethod
    def loads(text: str) -> Case:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise CaseError("<bundle>", f"not valid JSON ({e})") from None
        return Case.from_json(obj)

    def summary(self) -> dict[str, int]:
        rids = set()
        for s in self.steps:
            if s.rid is not None:
                rids.add(s.rid)
            rids.update(s.rids)
        return {"requests": len(rids), "steps": len(self.steps)}
