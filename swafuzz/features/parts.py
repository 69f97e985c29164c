"""A feature's side parts: one class per side of the core (engine, oracle, checks, scenarios,
the ``sglang`` target) whose typed slots the feature fills, like OpInfo's typed slots.

A record names each part once (``hooks={"engine.part": "module:Class", ...}``, the class a
subclass of the side's base here). Every slot has a default that adds nothing, so a feature
overrides only what it adds; the core asks :func:`swafuzz.features.parts` (every feature's part
of a side, in feature order) or :func:`swafuzz.features.slot` (the one part filling a slot).
A slot is a static method (a question the core asks with arguments) or a class attribute (a
class the core builds); :class:`lazy` names one by ``"module:attr"`` where importing it needs
the installed release (the ``sglang`` side).
"""

from __future__ import annotations

from swafuzz.features.record import load

__all__ = ["CheckPart", "EnginePart", "OraclePart", "SGLangPart", "ScenarioPart", "SIDES", "lazy",
           "fills"]


class lazy:
    """A slot value loaded on first read (``"module:attr"``), for code that imports the
    release."""

    def __init__(self, ref: str) -> None:
        self.ref = ref

    def __get__(self, obj, owner=None):
        return load(self.ref)


class EnginePart:
    """The unified engine's slots (asked by ``targets.engine``, ``backend``, ``kv_pool`` and the
    window path of the paths built on it)."""

    #: the step path class of the engine (any feature's ``uses_step_path`` builds it): it takes
    #: over the steps it handles and observes into its own channel
    step_path = None
    #: the allocator class of a Case ``uses_allocator`` claims (one that keeps store-row
    #: tables, ``tables``, instead of the paged one)
    allocator = None
    #: the backend mixin of the ``draft_block`` step
    draft_block_mixin = None
    #: the class (built with the device) padding a batch to the other ranks' rows and rewriting
    #: it to EXTEND (``rank_tokens``)
    rank_pad = None
    #: the window path's DECODE-graph runner class (none filled: graph steps run eagerly)
    window_graph_runner = None
    #: the window path's prefill-graph runner class (none filled: prefills run eagerly)
    prefill_graph_runner = None
    #: the window path's verify / DP-padded EXTEND class
    window_verify = None

    @staticmethod
    def uses_step_path(case) -> bool:
        """Whether the Case runs on the step path (any part answering True)."""
        return False

    @staticmethod
    def uses_allocator(case) -> bool:
        """Whether the Case needs the part's ``allocator`` (any part answering True)."""
        return False

    @staticmethod
    def draft_extend_loc_rows(case) -> int:
        """Rows of the draft-extend backend's SWA-location buffer (PR #34890); the largest
        answer counts (0: none)."""
        return 0

    @staticmethod
    def pool_impl(pool, impl):
        """The implementation a pool of the Case's cache layout stores through, or None (the
        first part answering; none: ``impl`` itself)."""
        return None

    @staticmethod
    def draft_block(engine, i, step):
        """The forwards of a ``draft_block`` step (one part)."""
        raise NotImplementedError

    @staticmethod
    def store_rows(tables, loc, positions):
        """int32 rows the stores write, from the allocator's tables (one part)."""
        raise NotImplementedError

    @staticmethod
    def store_skip(loc):
        """The store's skip guard when rows come from the allocator's tables (one part)."""
        raise NotImplementedError


class SGLangPart:
    """The ``sglang`` target's twins of the engine slots (asked by ``targets.sglang`` and the
    paths' seams); class slots are :class:`lazy` (they import the release)."""

    #: () -> the release's step path class
    step_path = None
    #: the release's DECODE-graph / prefill-graph runner classes under a window
    window_graph_runner = None
    prefill_graph_runner = None
    #: the release's window verify / DP-padded EXTEND class
    window_verify = None
    #: the release's prefix-hit, replay and compressor seams of the window path (0.5.23 only)
    prefix_path_mixin = None
    #: the release's draft block mixin
    draft_block_mixin = None
    #: (config, device, pool) -> the release's allocator of a Case the engine's
    #: ``uses_allocator`` claims
    allocator = None
    #: (backend, metadata, batch) -> None: the write rows stamped after the release's in-graph
    #: metadata op, when rows come from the allocator's tables
    post_metadata_stamp = None

    @staticmethod
    def pool_impl(pool, impl):
        """The release's store implementation for a pool of the Case's cache layout, or None."""
        return None

    @staticmethod
    def real_pool(pool_obj, pool) -> None:
        """Set the attributes the feature's release code reads on the release pool object
        (every part, every Case)."""

    @staticmethod
    def bare_backend(backend) -> None:
        """Set the attributes the feature's release code reads on a backend built without its
        constructor (every part)."""


class OraclePart:
    """The oracle's slots (asked by ``oracles.engine``, ``shadow``, ``paths``, ``sharing``)."""

    #: {op: (case, step, add) -> None}: the forwards each op the feature owns runs, through
    #: add(fwd, mode, runner, batch, per, n_real, eager_rows, pad_to)
    path_ops: dict = {}

    @staticmethod
    def shadow(case, observed_alloc, observed_channels, window_of):
        """The Shadow that answers this Case, or None (the paged Shadow then; first part)."""
        return None

    @staticmethod
    def step_path_shadow(case):
        """The shadow of the Case's step path, or None when the Case uses none (first part)."""
        return None

    @staticmethod
    def slot_rows(case, step, fwd, pool, layer, n_rows):
        """The bytes the forward's rows leave in their slots under the feature's cache layout,
        or None (the payload rows themselves then; first part)."""
        return None

    @staticmethod
    def prefix_cap(case, admit, n: int) -> int:
        """The tokens of an n-token prefix hit the Case shares after the feature's cap (every
        part, in feature order)."""
        return n

    @staticmethod
    def step_check(i, step) -> None:
        """Raise CaseInfeasible for a step whose feature fields the contract cannot run."""

    @staticmethod
    def rewrite(step):
        """The ForwardMode name the feature rewrites the step's batch to (run eagerly), or
        None (first part)."""
        return None

    @staticmethod
    def batch_pad(step, own, requests, width, whole):
        """(eager rows, batch size for the bucket, rows padded to) when the feature pads the
        step's batch, or None (first part)."""
        return None

    @staticmethod
    def graph_admit(pool) -> bool:
        """Whether an admit may run in a graph on that pool (any part saying so)."""
        return False


class CheckPart:
    """The checks' slots (asked by ``harness.checks``, ``write_checks``, ``contract_checks``,
    ``invariant_checks``, ``attribution``)."""

    @staticmethod
    def expected_refusal(obs, exp) -> bool:
        """Whether the target's error is the refusal the contract expects (any part)."""
        return False

    @staticmethod
    def slot_difference(case, want, got) -> str:
        """What a pool_bytes finding adds about where one slot's bytes differ, or ''."""
        return ""

    @staticmethod
    def slot_owner(case, loc):
        """Whose slot a resolved write location is under the feature's pool rules, or None
        (the paged owner then; first part)."""
        return None

    @staticmethod
    def skipped_loc(case, loc) -> bool:
        """Whether a negative write location is one the Case's stores skip (any part)."""
        return False

    @staticmethod
    def invariants(case, step_obs, where, live):
        """The invariants check's failures after one step of a Case whose pool the feature's
        rules judge, or None (the paged rules then; first part)."""
        return None


class ScenarioPart:
    """The input language's slots (asked by ``scenarios.validate`` and ``schema``)."""

    @staticmethod
    def step_shape(obj, path, kw, get) -> None:
        """Raise CaseError naming the field when a parsed step breaks the feature's shape rules
        (get(name): the step's field, its default when left out)."""

    @staticmethod
    def swa_buffer_pages(pool):
        """Pages of one SWA layer buffer under the feature's layout (dummy page included), or
        None (swa_pages + 1 then; first part)."""
        return None


#: side -> its base class; a record's ``hooks["<side>.part"]`` names a subclass
SIDES = {"engine": EnginePart, "sglang": SGLangPart, "oracle": OraclePart, "check": CheckPart,
         "scenario": ScenarioPart}


def fills(part: type, side: str, name: str) -> bool:
    """Whether ``part`` fills slot ``name`` of its side (sets it away from the base's)."""
    base = SIDES[side]
    return any(name in vars(c) for c in part.__mro__ if c is not base and issubclass(c, base))
