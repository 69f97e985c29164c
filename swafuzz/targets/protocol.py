"""The Target protocol: what swafuzz asks of an engine under test, built-in or from a plugin.

A *target* is a name bound to a **factory**. The harness calls it once per Case and executor::

    engine = factory(case, impl=impl, executor=executor, name=name)
    obs = engine.run()

* ``case`` - a :class:`swafuzz.scenarios.case.Case` (plain data; what every step means:
  ``features/*/SEMANTICS.md``).
* ``impl`` - the kernel implementation, already resolved: ``"torch"``, ``"triton"`` or
  ``"cuda"`` (``swafuzz.kernels.get_impl(impl)`` returns the module).
* ``executor`` - ``name`` (``"eager"``, ``"tape"``, ``"cudagraph"``), ``graphs`` (False: every
  forward eager), ``device`` and ``capture(fn) -> handle`` / ``replay(handle)``
  (``swafuzz.harness.executors.base``). A target does all device work of graph-mode forwards
  through ``capture``/``replay`` so the tape and CUDA graphs see it.
* ``name`` - the name the target was asked for (a factory may serve several).

``run()`` returns a :class:`swafuzz.targets.observation.Observation` (per step the pools' bytes
with redzones and the mapping, per forward how it ran and what it stored). It never raises for
a bug in the code under test: an exception inside a step goes into ``Observation.error``. What
the Case determines the oracle computes itself; the Observation is only compared against it.
Stateful episodes (``swafuzz.harness.pipeline.session``) call ``new_observation()`` once, then
``apply(obs, i, step) -> bool`` per step; a target without them is skipped by episodes.

The engine seams
----------------
The simplest external target subclasses :class:`swafuzz.targets.engine.UnifiedEngine` and
replaces some of its component classes (class attributes), as the bug zoo does::

    allocator_cls         pages, the full->SWA mapping M, alloc/free/evict   (targets/allocator.py)
    pool_cls              the SWA KV pool: redzoned buffers, translation      (targets/kv_pool.py)
    backend_cls           metadata init (eager / out-graph / in-graph), the
                          resolver get_swa_out_cache_loc, the store call      (targets/backend.py)
    multistep_backend_cls the multi-step draft backend                        (targets/backend.py)
    decode_runner_cls     decode / target-verify graph runner                 (targets/runners.py)
    draft_extend_runner_cls  draft-extend graph runner                        (targets/runners.py)
    multistep_runner_cls  multi-step draft runner                             (targets/runners.py)
    rank_pad_cls          cross-rank batch padding (a feature's, via the registry)

A plugin registers its factories when imported (:func:`swafuzz.targets.register`) or through
the ``swafuzz.targets`` entry-point group (``swafuzz.targets.plugins``).

Target hooks (optional attributes of the factory)
-------------------------------------------------
The harness asks a target, never a target's name, what it can do (a class factory: static or
class methods):

* ``supports(subject) -> None | str``: can this target run ``subject`` here (a
  :class:`swafuzz.features.Feature`, a scenario kind's name or a :class:`Case`)? None: yes; a
  string: why not. ``run`` leaves refused kinds out (asked for by name: exit 2), ``repro`` and
  the ledger's replay refuse such a Case, ``zoo`` runs each mutant on the kinds it supports,
  ``swafuzz list --features`` prints the answers. Without the hook a target supports
  everything (:func:`supports_everything`).
* ``check_available() -> None``: raise :class:`TargetUnavailable` when the target cannot run in
  this process (a package missing, a release outside the supported range).
* ``describe() -> str``: what ``swafuzz list --target NAME`` prints about it.
* ``versions() -> dict[str, str]``: the versions of the code it drives (``run.json``'s
  ``versions``); ``version() -> str | None``: the one a known-failure ledger's ``releases`` and
  ``when.release`` are checked against.

:func:`swafuzz.targets.supports`, ``describe``, ``versions`` and ``version`` ask a target by its
registered name, applying these defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from swafuzz.features import Feature
    from swafuzz.scenarios.case import Case, Step
    from swafuzz.targets.observation import Observation

    #: what :meth:`Supports.supports` is asked about
    Subject = Feature | str | Case


class UnknownTarget(KeyError):
    """No target of that name is registered, built in or from any plugin found."""

    def __str__(self) -> str:  # KeyError quotes its argument; this is a sentence
        return str(self.args[0])


class TargetUnavailable(RuntimeError):
    """A registered target cannot run here (e.g. ``sglang`` not installed, or an unsupported
    release); the message says why and what is supported. The CLI exits 2 with it."""


class Executor(Protocol):
    """What a target may use of the executor it is given."""

    name: str
    graphs: bool
    device: Any

    def capture(self, fn: Any) -> object: ...

    def replay(self, handle: object) -> None: ...


@runtime_checkable
class Engine(Protocol):
    """One engine running one Case (``run``); episodes also use ``new_observation``/``apply``."""

    def run(self) -> Observation: ...


@runtime_checkable
class SteppableEngine(Engine, Protocol):
    """An engine that stateful episodes can drive one step at a time."""

    def new_observation(self) -> Observation: ...

    def apply(self, obs: Observation, i: int, step: Step) -> bool: ...


class TargetFactory(Protocol):
    """``factory(case, *, impl, executor, name) -> Engine`` (a class is the usual factory)."""

    def __call__(self, case: Case, *, impl: str, executor: Executor, name: str) -> Engine: ...


@runtime_checkable
class Supports(Protocol):
    """A factory that says what it can run (the ``supports`` hook; see the module docstring)."""

    def supports(self, subject: Subject) -> str | None: ...


def supports_everything(subject: Subject) -> None:
    """The answer of a target without a ``supports`` hook: it runs every feature, kind and
    Case (``unified`` and the bug zoo implement every path of the engine model)."""
    return None
