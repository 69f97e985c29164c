"""Targets: the code under test above the kernels, and the registry of engines.

Registry
--------
``get_target(name)`` returns a factory ``factory(case, *, impl, executor, name) -> engine`` whose
``engine.run()`` returns a :class:`targets.observation.Observation`; ``TARGETS`` maps names to
factories. ``"unified"`` is :class:`targets.driver.UnifiedEngine`; ``"sglang"`` (SGLang's own code,
:mod:`targets.sglang`) is registered always but imports SGLang only when requested, raising
:class:`TargetUnavailable` when it cannot run here. Mutants register themselves as
``"mutant:<name>"`` with :func:`register` when ``targets.mutants`` is imported (``get_target``
imports it for ``mutant:`` names).

Engine modules: ``forward_mode`` (ForwardMode, GraphBucket, ForwardBatch), ``allocator`` (pages
and ``M``), ``kv_pool`` (redzoned SWA buffers, translation), ``metadata`` (check-eq/copy/assign),
``backend`` (eager / out-graph / in-graph init, resolver, store), ``runners`` (decode/verify,
draft-extend, multi-step), ``dp`` (DP padding), ``model`` (per-layer store), ``driver`` (the
engine: Case -> Observation).

How each mutant of issue #5 plugs in (one class attribute of ``UnifiedEngine`` replaced by a
subclass overriding ONE method):

==  ==========================================  ================================================
#   bug class (spec §9)                          override
==  ==========================================  ================================================
1   draft-extend synthetic zeros stamped         ``DSV4Backend.out_graph_draft_extend`` (build
                                                 from ``seq_lens.new_zeros(rows)`` ignoring
                                                 ``loc`` and set ``core.swa_out_cache_loc =
                                                 self.translate(zeros)``); graph-only, via
                                                 ``backend_cls``
2   resolver without length check                ``DSV4Backend.cache_usable`` (drop ``shape[0]
                                                 == n``)
3   IDLE uses cached metadata                    ``DSV4Backend.cache_usable`` (drop the IDLE
                                                 guard; eager MTP IDLE keeps stale metadata)
4   pad rows not re-zeroed                       ``GraphRunner.fill_static_loc`` (copy real rows,
                                                 never zero) via ``decode_runner_cls`` (and/or
                                                 ``draft_extend_runner_cls``)
5   (data_ptr, numel) memo, no invalidation      ``SWAKVPool.translate_loc_from_full_to_swa``
                                                 via ``pool_cls`` (memo state on the pool)
6   storage-pointer memo                         same method, key ``loc.untyped_storage()
                                                 .data_ptr()``
7   layer-keyed cache not reset                  ``DSV4Backend.get_store_loc`` (translate when
                                                 ``layer_id == 0``, else reuse a cache kept on
                                                 the pool; draft layer ids start at ``layers``)
8   int64 locs to the int32 store                ``DSV4Backend._store`` (unchecked launch with
                                                 ``loc.to(int64)``) - or ``translate`` returning
                                                 ``pool.mapping[loc]`` plus ``_store`` unchecked
9   host-baked translation                       ``DSV4Backend.translate_in_graph`` (values from
                                                 the host at warm-up, reused at capture; report
                                                 them in ``self.baked["swa_out_cache_loc"]``,
                                                 which the runner copies into ForwardObs.baked)
10  -1 location through the sentinel             ``DSV4Backend._store`` (unchecked launch) with a
                                                 -1 source, e.g. ``GraphRunner.fill_static_loc``
                                                 padding with -1
11  multi-step wrong slice                       ``DSV4Backend.select_step_loc`` (always step 0)
12  eviction without unmapping                   ``SWAAllocator.free_swa_out_of_window`` (call
                                                 ``release_swa_pages`` only) via
                                                 ``allocator_cls``
13  swa_out_cache_loc as a copy field            ``DSV4Backend.copy_graph_metadata`` (call
                                                 ``metadata.copy_metadata`` with
                                                 ``swa_out_cache_loc`` in the copy list)
==  ==========================================  ================================================

Unchecked launches: ``kernels.torch_impl._store(cache, loc, rows, log2p)`` is the torch path
without contracts; the Triton module has no public unchecked wrapper (its kernels are
``triton_impl._store_kernel``), so mutants 8/10 on ``impl="triton"`` need one from ``kernels/``.
"""

from __future__ import annotations

from typing import Any, Callable

TARGETS: dict[str, Callable[..., Any]] = {}


class TargetUnavailable(RuntimeError):
    """A registered target cannot run here (e.g. ``sglang`` not installed, or an unsupported
    release); the message says why and what is supported. The CLI exits 2 with it."""


def _sglang(case, **kwargs):
    """The ``sglang`` target (imports SGLang only when the target is used)."""
    from swafuzz.targets.sglang.engine import SGLangEngine

    return SGLangEngine(case, **kwargs)


_sglang.allocation = "observed"  # the oracle validates SGLang's allocation choices


def register(name: str, factory: Callable[..., Any]) -> None:
    """Register ``factory(case, *, impl, executor, name) -> engine`` under ``name``."""
    if not name or not isinstance(name, str):
        raise ValueError(f"register(name={name!r}): name must be a non-empty string")
    TARGETS[name] = factory


def _ensure_builtin() -> None:
    if "unified" not in TARGETS:
        from swafuzz.targets.driver import UnifiedEngine
        from swafuzz.targets.selftest import SegfaultEngine

        register("unified", UnifiedEngine)
        register("selftest:segfault", SegfaultEngine)
        register("sglang", _sglang)


def get_target(name: str) -> Callable[..., Any]:
    """The factory registered as ``name``; raises ``KeyError`` listing the known names."""
    _ensure_builtin()
    if name not in TARGETS and name.startswith("mutant:"):
        import swafuzz.targets.mutants  # noqa: F401 - mutants register themselves on import
    if name not in TARGETS:
        raise KeyError(f"get_target({name!r}): unknown target; known: {sorted(TARGETS)}")
    if name == "sglang":
        import swafuzz.targets.sglang.engine  # noqa: F401 - raises TargetUnavailable early
    return TARGETS[name]


def available_targets() -> list[str]:
    """Every registered target name: ``unified`` and each ``mutant:<name>``."""
    _ensure_builtin()
    import swafuzz.targets.mutants  # noqa: F401 - mutants register themselves on import

    return sorted(TARGETS)
