"""The ``sglang`` target as the registry holds it: the factory and its hooks (the protocol's).

Imports no SGLang until an engine is built or :meth:`SGLangTarget.check_available` runs. What
it can run: a feature's or kind's ``since["sglang"]`` (:class:`~swafuzz.features.Since`, the
first release the adapter drives for it; ``None``: none) against the installed
:func:`~swafuzz.targets.sglang.release`, then a Case against what the release has
(:func:`swafuzz.targets.sglang.features.case_missing`).

    TARGET.supports("ring")             # the installed release's answer (None: it runs)
    supports_at("ring", "0.5.20")       # any release's, from the records only
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import swafuzz.targets.sglang as sg
from swafuzz import features
from swafuzz.features import Feature, Since
from swafuzz.scenarios.case import Case
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang.matrix import table_text
from swafuzz.targets.sglang.pipeline.hops import hop_text, server_mutant_sources

if TYPE_CHECKING:  # pragma: no cover - typing only
    from swafuzz.targets.protocol import Subject

NAME = "sglang"
#: the adapter's modules that import SGLang (an optional dependency), loaded by reference only
#: when an engine is built or the installed release is inspected
ENGINE = "swafuzz.targets.sglang.engine:SGLangEngine"
FOUND = "swafuzz.targets.sglang.features"


def releases() -> tuple[str, ...]:
    """Every release of :data:`~swafuzz.targets.sglang.SUPPORTED_RANGE`, oldest first (the
    range's ends share major and minor: one release per patch number)."""
    lo, hi = (sg.version_key(v) for v in sg.SUPPORTED_RANGE)
    if lo[:2] != hi[:2]:  # pragma: no cover - the range is one minor series
        raise ValueError(f"SUPPORTED_RANGE {sg.SUPPORTED_RANGE} spans minor series")
    return tuple(f"{lo[0]}.{lo[1]}.{p}" for p in range(lo[2], hi[2] + 1))


def _refusal(what: str, since: Since | None, release: str, label: str) -> str | None:
    if since is None:
        return None
    if since.release is None:
        return f"the sglang target does not drive {what} on any release: {since.why}"
    if sg.version_key(release) >= sg.version_key(since.release):
        return None
    return f"{what}: {label} has no {since.why} (first in {since.release})"


def _kind_refusal(owner: Feature, kind: str, release: str, label: str) -> str | None:
    return _refusal(f"scenario kind {kind} (feature {owner.name})", owner.since_for(NAME, kind),
                    release, label)


def supports_at(subject: Subject, release: str, label: str | None = None) -> str | None:
    """The records' answer for ``subject`` (Feature, kind name or Case) on ``release``: None, or
    why not (naming it, ``label`` - default ``sglang RELEASE`` - and what it lacks). A feature
    runs where one of its kinds does; a Case needs its kind and every feature whose fields it
    sets (reasons joined)."""
    label = label or f"sglang {release}"
    if isinstance(subject, Feature):
        why = _refusal(f"feature {subject.name}", subject.since_for(NAME), release, label)
        if why is None:
            kinds = [_kind_refusal(subject, k, release, label) for k in subject.kind_names()]
            if all(kinds):
                why = f"feature {subject.name}: none of its kinds runs ({'; '.join(kinds)})"
        return why
    if isinstance(subject, str):  # KeyError naming the known kinds
        return _kind_refusal(features.feature_of_kind(subject), subject, release, label)
    if not isinstance(subject, Case):
        raise TypeError(f"supports: a Feature, a scenario kind or a Case expected, got "
                        f"{type(subject).__name__}")
    reasons = [supports_at(subject.kind, release, label)
               if subject.kind in features.kind_names() else None]
    reasons += [_refusal(f"feature {f.name} (used by the Case)", f.since_for(NAME), release,
                         label) for f in features.features_using(subject)
                if subject.kind not in f.kind_names()]  # the kind's answer covers its owner
    return "; ".join(dict.fromkeys(r for r in reasons if r)) or None


class SGLangTarget:
    """The ``sglang`` factory: ``TARGET(case, ...)`` builds an :class:`SGLangEngine` (importing
    SGLang); the hooks answer without it where they can."""

    #: the oracle validates this target's allocation choices instead of predicting them
    allocation = "observed"
    #: server level (issue 18): the release's batch pipeline running a server-level Case
    #: (imports SGLang; a release lacking one of its hops raises TargetUnavailable naming it)
    server_pipeline = "swafuzz.targets.sglang.pipeline.spec:run_case"
    #: the release's own ServerArgs checks (``release_refusal(config) -> str | None``; a module
    #: helper srvargs builds: absent, nothing is refused by it)
    server_refusal = "swafuzz.targets.sglang.pipeline.argnames:release_refusal"
    #: the SGLang functions on the SWA path, reported by name by ``run --coverage``
    coverage_focus = "swafuzz.targets.sglang.coverage_focus:FOCUS"

    @staticmethod
    def server_mutants() -> dict[str, str]:
        """The server mutants (patches of the release's pipeline code): name -> source."""
        return server_mutant_sources()

    def __call__(self, case: Case, **kwargs: Any) -> Any:
        return features.load(ENGINE)(case, **kwargs)  # imports SGLang (optional)

    def __repr__(self) -> str:
        return "<target sglang>"

    @staticmethod
    def check_available() -> None:
        """Raise :class:`TargetUnavailable` unless the adapter imports with the installed
        release (sglang missing, outside the range, a release lacking a base seam)."""
        features.load(ENGINE)  # imports SGLang (optional)

    @staticmethod
    def supports(subject: Subject) -> str | None:
        """:func:`supports_at` for the installed release (a forced adapter: the adapter's), and
        for a Case what it lacks on inspection (:func:`.features.case_missing`; skipped if the
        records already refuse). Unavailable: that message."""
        try:
            v, adapter = sg.release()
        except TargetUnavailable as e:
            return str(e)
        at = v if sg.in_range(v) else adapter
        why = supports_at(subject, at, f"sglang {v}" + ("" if v == adapter
                                                       else f" (adapter {adapter})"))
        if not isinstance(subject, Case):
            return why
        try:  # what the release lacks, by name (after the records' reason, if any)
            seam = features.load(FOUND).case_missing(subject)  # imports SGLang
        except TargetUnavailable as e:
            seam = None if why else str(e)
        return "; ".join(w for w in (why, seam) if w) or None

    @staticmethod
    def releases() -> tuple[str, ...]:
        return releases()

    @staticmethod
    def supports_at(subject: Subject, release: str) -> str | None:
        return supports_at(subject, release)

    @staticmethod
    def describe() -> str:
        """The installed release and the real/modelled table (``swafuzz list --target sglang``)."""
        try:
            v, a = sg.release()
            head = f"target sglang: installed sglang {sg.label(v, a)}"
        except TargetUnavailable as e:
            head = str(e)
        return f"{head}\n\n{table_text()}\n\n{hop_text()}"

    @staticmethod
    def versions() -> dict[str, str]:
        """``{"sglang": label}`` (:func:`~swafuzz.targets.sglang.label`, e.g. ``0.5.24 (adapter
        0.5.23, resolver family)``) or the refusal's reason; reads metadata only."""
        try:
            v, adapter = sg.release()
        except TargetUnavailable:
            v = sg.installed_version()
            return {NAME: "not installed" if v is None else f"{v} (unsupported)"}
        return {NAME: sg.label(v, adapter)}

    @staticmethod
    def version() -> str | None:
        """The installed sglang release (as its bundles record it), for the ledger."""
        return sg.installed_version()

    @staticmethod
    def release() -> dict[str, str | None]:
        """The code under test: ``{"project": "sglang", "version": <installed release>}`` (the
        ledger's entries name the project; a plugin wrapping this target inherits it)."""
        return {"project": NAME, "version": sg.installed_version()}


TARGET = SGLangTarget()
