"""The feature record: one declarative description per path of the full->SWA translation.

A :class:`Feature` says, for one path (dense rows, the DSV4 layout, the ring, the request window,
...), all the generic machinery needs to fuzz it: scenario kinds, owned Case fields, the modules
of each side (``unified`` engine part, plain-Python oracle part, ``sglang`` seam), checks,
mutants, which releases run it and why not the others, and where its semantics are written
(after PyTorch's OpInfo and syzkaller's per-subsystem descriptions).

References are strings (``"pkg.mod"`` / ``"pkg.mod:attr"``; a leading ``"."`` is relative to the
feature's package, :meth:`Feature.rooted`): a record imports nothing, so reading the registry
never drags a feature's engine, oracle or SGLang in, and the core reaches feature code only
through the registry.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REF = re.compile(r"^swafuzz(\.[a-z_][a-z0-9_]*)+(:[A-Za-z_][A-Za-z0-9_]*)?$")
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
#: the levels a kind runs at (:class:`Kind.level`)
LEVELS = ("component", "server")


class RecordError(ValueError):
    """A feature record is malformed: the message names the feature and the field."""


@dataclass(frozen=True)
class Since:
    """From which release of a target a kind (or a whole feature) can run there.

    ``release``: the first release whose code the target drives for it, or ``None`` when no
    release is driven (the adapter does not drive this form at all); ``why``: what the releases
    before it lack (or why none is driven), as a user should read it in a refusal."""

    release: str | None
    why: str


@dataclass(frozen=True)
class Kind:
    """A scenario kind: ``strategy`` (``"module:callable"``) returns a ``SearchStrategy[Case]`` of
    Cases with ``kind == name``.

    ``since``: per-target overrides of :attr:`Feature.since`; ``level``: ``"component"`` or
    ``"server"``; ``opt_in``: run only when named with ``--scenario`` (a new kind leaves the default
    draws as they were); ``ram_bytes`` > 0: RAM one Case needs, opt-in too, refused (exit 2) on a
    machine with less available."""

    name: str
    strategy: str
    summary: str
    since: dict[str, Since] = field(default_factory=dict)
    ram_bytes: int = 0
    level: str = "component"
    opt_in: bool = False

    @property
    def default(self) -> bool:
        """In its level's default kinds (not opt-in, not resource-gated)."""
        return not self.opt_in and not self.ram_bytes


@dataclass(frozen=True)
class Refusal:
    """Why a level does not run a Case the feature's rules concern; with :class:`Since`, the one place
    support is decided (``swafuzz.features.refusal`` asks every record).

    ``applies`` (``"module:function"``): a config refusal's takes the Case's config and says whether
    it applies, ``why`` the reason (naming field and allowed values); a release refusal's
    (``release=True``) takes the config under the release's ``ServerArgs`` names and the installed
    version and returns the reason or None (from the release's modules, never its version).
    ``after``: the ``applies`` asked right before it (empty: feature order), so it fixes whose reason
    a Case several refusals concern reads."""

    level: str
    applies: str
    why: str = ""
    release: bool = False
    after: str = ""


@dataclass(frozen=True)
class Feature:
    """One path of the translation, described once.

    ``name`` / ``title`` / ``source`` (spec sections, upstream PRs); ``kinds`` (each in one feature);
    ``fields``: ``"module:attr"`` of its :class:`~swafuzz.features.case_field.CaseField` tuple (a
    Case setting one off its default uses the feature); ``validators``: ``"module:function"``s raising
    ``CaseError``; ``oracle`` / ``engine`` / ``sglang``: its modules on each side; ``checks`` (defined
    in ``check_modules``), ``mutants`` (declaring modules); ``since``: per target, the first release
    running it (absent: all); ``semantics`` (default its ``SEMANTICS.md``); ``refusals``
    (:class:`Refusal`); ``hooks``: extension point (:data:`swafuzz.features.HOOK_POINTS`) ->
    ``"module:attr"``, asked through :func:`swafuzz.features.hook` / ``hooks``."""

    name: str
    title: str
    source: str
    kinds: tuple[Kind, ...]
    fields: str = ""
    validators: tuple[str, ...] = ()
    oracle: tuple[str, ...] = ()
    engine: tuple[str, ...] = ()
    sglang: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    check_modules: tuple[str, ...] = ()
    mutants: tuple[str, ...] = ()
    since: dict[str, Since] = field(default_factory=dict)
    semantics: str = ""
    hooks: dict[str, str] = field(default_factory=dict)
    refusals: tuple[Refusal, ...] = ()

    def __post_init__(self) -> None:
        if not self.semantics:
            object.__setattr__(self, "semantics", f"swafuzz/features/{self.name}/SEMANTICS.md")

    def rooted(self, package: str) -> Feature:
        """The record with every reference starting with ``"."`` made absolute under
        ``package`` (``".kinds:cases"`` -> ``"<package>.kinds:cases"``)."""
        def a(ref: str) -> str:
            return package + ref if ref.startswith(".") else ref

        seqs = {n: tuple(map(a, getattr(self, n))) for n in (
            "validators", "oracle", "engine", "sglang", "check_modules", "mutants")}
        return replace(self, **seqs, fields=a(self.fields),
                       kinds=tuple(replace(k, strategy=a(k.strategy)) for k in self.kinds),
                       refusals=tuple(replace(r, applies=a(r.applies)) for r in self.refusals),
                       hooks={p: a(r) for p, r in self.hooks.items()})

    def field_decls(self) -> tuple:
        """The feature's :class:`~swafuzz.features.case_field.CaseField` declarations."""
        return tuple(load(self.fields)) if self.fields else ()

    @property
    def case_fields(self) -> tuple[str, ...]:
        """The Case fields it owns, ``"pool.x"`` / ``"graph.x"`` / ``"step.x"``."""
        return tuple(d.ref for d in self.field_decls())

    def kind_names(self, level: str | None = "component") -> tuple[str, ...]:
        """Its kinds of ``level`` (None: every level)."""
        return tuple(k.name for k in self.kinds if level is None or k.level == level)

    def since_for(self, target: str, kind: str | None = None) -> Since | None:
        """The :class:`Since` of ``target`` for ``kind`` (its own override, else the
        feature's), or None when every release the target supports runs it."""
        for k in self.kinds:
            if k.name == kind and target in k.since:
                return k.since[target]
        return self.since.get(target)

    def validate(self) -> None:
        """Raise :class:`RecordError` naming the field when the record is malformed."""
        def bad(fieldname: str, msg: str) -> RecordError:
            return RecordError(f"feature {self.name!r}: {fieldname}: {msg}")

        if not _NAME.match(self.name):
            raise bad("name", "lower-case identifier expected")
        if not self.title or not self.source:
            raise bad("title/source", "must not be empty")
        if not self.kinds:
            raise bad("kinds", "a feature needs at least one scenario kind")
        for k in self.kinds:
            if not _NAME.match(k.name):
                raise bad("kinds", f"{k.name!r} is not a lower-case identifier")
            if not _REF.match(k.strategy) or ":" not in k.strategy:
                raise bad(f"kinds[{k.name}].strategy", f"{k.strategy!r} is not 'module:callable'")
            _check_since(bad, f"kinds[{k.name}].since", k.since)
            if not isinstance(k.ram_bytes, int) or isinstance(k.ram_bytes, bool) \
                    or k.ram_bytes < 0:
                raise bad(f"kinds[{k.name}].ram_bytes",
                          f"{k.ram_bytes!r} is not an int >= 0 (0: not resource-gated)")
            if k.level not in LEVELS or not isinstance(k.opt_in, bool):
                raise bad(f"kinds[{k.name}].level", f"{k.level!r}/{k.opt_in!r}: level one of "
                          f"{', '.join(LEVELS)}, opt_in a bool")
        if self.fields and (not _REF.match(self.fields) or ":" not in self.fields):
            raise bad("fields", f"{self.fields!r} is not 'module:attr'")
        for ref in self.validators:
            if not _REF.match(ref) or ":" not in ref:
                raise bad("validators", f"{ref!r} is not 'module:function'")
        for attr in ("oracle", "engine", "sglang", "check_modules", "mutants"):
            for ref in getattr(self, attr):
                if not _REF.match(ref) or ":" in ref:
                    raise bad(attr, f"{ref!r} is not a swafuzz module path")
        _check_since(bad, "since", self.since)
        for r in self.refusals:
            if not isinstance(r, Refusal) or r.level not in LEVELS or not _REF.match(
                    r.applies) or ":" not in r.applies or not (r.why or r.release):
                raise bad("refusals", f"{r!r}: Refusal(level, 'module:function', why) expected")
        for point, ref in self.hooks.items():
            if not _REF.match(ref) or ":" not in ref:
                raise bad(f"hooks[{point}]", f"{ref!r} is not 'module:attr'")


def _check_since(bad, where: str, since: dict[str, Since]) -> None:
    for target, s in since.items():
        if not isinstance(s, Since):
            raise bad(where, f"{target!r}: a Since(release, why) expected")
        if s.release is not None and not _RELEASE.match(s.release):
            raise bad(where, f"{target!r}: release {s.release!r} is not X.Y.Z")
        if not s.why:
            raise bad(where, f"{target!r}: the reason must not be empty")


def place_after(order: list, pending: list, name: Callable, problem: Callable) -> list:
    """``order`` with each entry of ``pending`` inserted right after the entry its ``after``
    names (``name(entry)``), each as soon as that entry is placed; raises :class:`RecordError`
    (``problem(entry)``) when an ``after`` names no entry."""
    order, pending = list(order), list(pending)
    while pending:
        names = [name(x) for x in order]
        d = next((d for d in pending if d.after in names), None)
        if d is None:
            raise RecordError(problem(pending[0]))
        order.insert(names.index(d.after) + 1, d)
        pending.remove(d)
    return order


def load(ref: str) -> Any:
    """Import a ``"module"`` or ``"module:attr"`` reference of a record."""
    mod, _, attr = ref.partition(":")
    m = importlib.import_module(mod)
    return getattr(m, attr) if attr else m


# -- checks: ``@check`` declares one where it is defined (the registry over the records:
# :mod:`swafuzz.checks.registry`, whose docstring says what a check is)
@dataclass(frozen=True)
class Check:
    """One registered check: its ``name`` (the ``Failure.check`` it reports), the function, the
    defence-in-depth reason (None: it must be the sole killer of a mutant), whether it runs
    across observations, and the module defining it."""

    name: str
    fn: Callable
    defence: str | None
    across: bool
    module: str
    level: str = "component"

    @property
    def ref(self) -> str:
        """The name a record lists: ``name`` at component level, ``level:name`` otherwise."""
        return self.name if self.level == "component" else f"{self.level}:{self.name}"


_DEFINED: list[Check] = []


def check(name: str, defence: str | None = None, across: bool = False,
          level: str = "component") -> Callable:
    """Register the decorated function as check ``name`` (see :mod:`swafuzz.checks.registry`);
    the function is returned unchanged."""
    if not _NAME.match(name):
        raise ValueError(f"check name {name!r} is not a lower-case identifier")
    if defence is not None and (not isinstance(defence, str) or not defence.strip()):
        raise ValueError(f"check {name!r}: the defence-in-depth reason must be a non-empty "
                         "string (or None)")

    if level not in LEVELS:
        raise ValueError(f"check {name!r}: level {level!r} (allowed: {', '.join(LEVELS)})")

    def register(fn: Callable) -> Callable:
        entry = Check(name, fn, defence, across, fn.__module__, level)
        for i, c in enumerate(_DEFINED):
            if (c.module, c.ref) == (entry.module, entry.ref):  # the module was imported again
                _DEFINED[i] = entry
                return fn
        _DEFINED.append(entry)
        return fn

    return register


def registered() -> tuple[Check, ...]:
    """Every check defined so far in an imported module, whether a feature lists it or not."""
    return tuple(_DEFINED)
