"""A feature's side parts: one class per side of the core (engine, ``sglang`` target, oracle,
checks, input language) whose typed slots the feature fills, like OpInfo's typed slots.

A record names each part once (``hooks={"engine.part": "module:Class", ...}``, a subclass of
the side's base here). Every slot defaults to adding nothing, so a part overrides only what its
feature adds; the core asks :func:`swafuzz.features.parts` (every part of a side, in feature
order) or :func:`swafuzz.features.slot` (the one part filling a slot). A slot is a static method
(a question asked with arguments) or a class attribute (a class the core builds); :class:`lazy`
names one by ``"module:attr"`` where importing it needs the installed release.
"""

from __future__ import annotations

from swafuzz.features.record import load

__all__ = ["CheckPart", "EnginePart", "OraclePart", "SGLangPart", "ScenarioPart", "SIDES", "lazy",
           "fills"]


class lazy:
    """A slot value loaded on read (``"module:attr"``): code that imports the release."""

    def __init__(self, ref: str) -> None:
        self.ref = ref

    def __get__(self, obj, owner=None):
        return load(self.ref)


class EnginePart:
    """The unified engine's slots (``targets.engine`` / ``backend`` / ``kv_pool``, and the
    window path the window family's paths plug into). Class slots: one part fills each."""

    step_path = None  # the step path class (a part's uses_step_path builds it)
    allocator = None  # the allocator class keeping store-row tables (uses_allocator)
    draft_block_mixin = None  # the backend mixin of the draft_block step
    rank_pad = None  # built with the device: pads a batch to the other ranks' rows (EXTEND)
    window_graph_runner = None  # the window path's DECODE-graph runner (none: eager)
    prefill_graph_runner = None  # the window path's prefill-graph runner (none: eager)
    window_verify = None  # the window path's verify / DP-padded EXTEND class

    @staticmethod
    def uses_step_path(case) -> bool:
        """Whether the Case runs on the step path (any part)."""
        return False

    @staticmethod
    def uses_allocator(case) -> bool:
        """Whether the Case needs the ``allocator`` slot's allocator (any part)."""
        return False

    @staticmethod
    def draft_extend_loc_rows(case) -> int:
        """Rows of the draft-extend backend's SWA-location buffer (PR #34890; the largest)."""
        return 0

    @staticmethod
    def pool_impl(pool, impl):
        """The implementation a pool of the Case's layout stores through (first; None: impl)."""
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
    """The ``sglang`` target's twins of the engine's slots (class slots :class:`lazy`)."""

    step_path = None  # () -> the release's step path class
    window_graph_runner = None
    prefill_graph_runner = None
    window_verify = None
    prefix_path_mixin = None  # prefix-hit, replay and compressor seams of the window path
    draft_block_mixin = None
    allocator = None  # (config, device, pool) -> the release's allocator (uses_allocator)
    post_metadata_stamp = None  # (backend, metadata, batch): rows stamped after the in-graph op
    #: (case, impl, executor, pipeline class) -> the observation of a server-level Case with
    #: the radix (prefix) cache on (targets.sglang.pipeline.steps)
    server_tree = None
    #: (case, impl, executor, pipeline class) -> the observation of a server-level Case whose
    #: server is the decode side of PD disaggregation (targets.sglang.pipeline.steps)
    server_takeover = None

    @staticmethod
    def pool_impl(pool, impl):
        """The release's store for a pool of the Case's layout, or None (first part)."""
        return None

    @staticmethod
    def real_pool(pool_obj, config) -> None:
        """Set what the feature's release code reads on the release pool object (every part)."""

    @staticmethod
    def bare_backend(backend) -> None:
        """Set what the feature's release code reads on a constructor-less backend (every
        part)."""


class OraclePart:
    """The oracle's slots (``oracles.engine`` / ``shadow`` / ``paths`` / ``sharing``)."""

    #: {op: (case, step, add) -> None}: the forwards each op the feature owns runs, through
    #: add(fwd, mode, runner, batch, per, n_real, eager_rows, pad_to)
    path_ops: dict = {}

    @staticmethod
    def shadow(case, observed_alloc, observed_channels, window_of):
        """The Shadow answering this Case, or None (the paged Shadow; first part)."""
        return None

    @staticmethod
    def step_path_shadow(case):
        """The shadow of the Case's step path, or None (first part)."""
        return None

    @staticmethod
    def slot_rows(case, step, fwd, pool, layer, n_rows):
        """The bytes the rows leave in their slots under the feature's cache layout, or None
        (the payload rows; first part)."""
        return None

    @staticmethod
    def prefix_cap(case, admit, n: int) -> int:
        """The tokens of an n-token prefix hit left after the feature's cap (every part)."""
        return n

    @staticmethod
    def step_check(i, step) -> None:
        """Raise CaseInfeasible for a step whose feature fields the contract cannot run."""

    @staticmethod
    def rewrite(step):
        """The ForwardMode the feature rewrites the step's batch to (eager), or None."""
        return None

    @staticmethod
    def batch_pad(step, own, requests, width, whole):
        """(eager rows, batch size for the bucket, rows padded to), or None (first part)."""
        return None

    @staticmethod
    def graph_admit(pool) -> bool:
        """Whether an admit may run in a graph on that pool (any part)."""
        return False

    @staticmethod
    def server_pad(case, mode: str, rows: int, bs: int, exec_: str):
        """(rows, batch size) a server-level forward runs with after the feature's padding
        of the batch, or None (first part)."""
        return None


class CheckPart:
    """The checks' slots (``checks.runner`` / ``write_checks`` / ``contract_checks`` /
    ``invariant_checks`` / ``attribution``)."""

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
        """Whose slot a write location is under the feature's pool rules, or None (first)."""
        return None

    @staticmethod
    def skipped_loc(case, loc) -> bool:
        """Whether a negative write location is one the Case's stores skip (any part)."""
        return False

    @staticmethod
    def invariants(case, step_obs, where, live):
        """The invariants check's failures after a step of a Case whose pool the feature's
        rules judge, or None (the paged rules; first part)."""
        return None


class ScenarioPart:
    """The input language's slots (``scenarios.validate`` / ``schema``)."""

    @staticmethod
    def step_shape(obj, path, kw, get) -> None:
        """Raise CaseError naming the field when a parsed step breaks the feature's shape
        rules (get(name): the step's field, its default when left out)."""

    @staticmethod
    def swa_buffer_pages(pool):
        """Pages of one SWA layer buffer (dummy included), or None (swa_pages + 1; first)."""
        return None


#: side -> its base class; a record's ``hooks["<side>.part"]`` names a subclass
SIDES = {"engine": EnginePart, "sglang": SGLangPart, "oracle": OraclePart, "check": CheckPart,
         "scenario": ScenarioPart}


def fills(part: type, side: str, name: str) -> bool:
    """Whether ``part`` fills slot ``name`` of its side (sets it away from the base's)."""
    base = SIDES[side]
    return any(name in vars(c) for c in part.__mro__ if c is not base and issubclass(c, base))
