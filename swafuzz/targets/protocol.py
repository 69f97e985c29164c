"""The Target protocol: what swafuzz asks of an engine under test, built-in or from a plugin.

A *target* is a name bound to a **factory**, called once per Case and executor::

    engine = factory(case, impl=impl, executor=executor, name=name)
    obs = engine.run()

``case``: a :class:`swafuzz.scenarios.case.Case` (step meanings: ``features/*/SEMANTICS.md``);
``impl``: ``"torch"``, ``"triton"`` or ``"cuda"`` (``swafuzz.kernels.get_impl``); ``executor``:
``name``, ``graphs`` (False: all eager), ``device``, ``capture(fn) -> handle`` /
``replay(handle)`` (``harness.executors.base``) - all device work of graph-mode forwards goes
through them; ``name``: the name asked for (a factory may serve several).

``run()`` returns an :class:`swafuzz.targets.observation.Observation` and never raises for a bug
in the code under test (it goes into ``Observation.error``); the oracle computes the expected
side itself. Stateful episodes call ``new_observation()`` then ``apply(obs, i, step) -> bool``
per step; a target without them is skipped by episodes.

The engine seams: an external target may subclass
:class:`swafuzz.targets.engine.UnifiedEngine` and replace component classes, as the bug zoo
does: ``allocator_cls`` (pages, mapping M, alloc/free/evict; allocator.py), ``pool_cls`` (SWA KV
pool, redzones, translation; kv_pool.py), ``backend_cls`` / ``multistep_backend_cls`` (metadata
init eager / out-graph / in-graph, resolver, store call; backend.py), ``decode_runner_cls``,
``draft_extend_runner_cls``, ``multistep_runner_cls`` (runners.py), ``rank_pad_cls`` (a
feature's, via the registry). Plugins register when imported (:func:`swafuzz.targets.register`)
or through the ``swafuzz.targets`` entry-point group (``swafuzz.targets.plugins``).

Optional hooks of a factory (static or class methods; the harness asks these, never a name):

* ``supports(subject) -> None | str``: None if it can run ``subject`` (a Feature, a kind's name
  or a Case), else why not. ``run`` leaves refused kinds out (by name: exit 2), ``repro`` and
  ledger replay refuse, ``zoo`` skips, ``list --features`` prints it. Default:
  :func:`supports_everything`.
* ``check_available() -> None``: raise :class:`TargetUnavailable` if it cannot run here.
* ``describe() -> str``: what ``swafuzz list --target NAME`` prints.
* ``versions() -> dict[str, str]`` (``run.json``'s ``versions``); ``version() -> str | None``
  (checked against a ledger's ``releases`` / ``when.release``); ``release() -> {"project": str,
  "version": str | None}`` (the code under test: a ledger entry's ``target`` names the project,
  a bundle records it; default: the target's own name and ``version()``).

:func:`swafuzz.targets.supports`, ``describe``, ``versions`` and ``version`` apply these defaults.
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
