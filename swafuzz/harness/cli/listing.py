"""``swafuzz list``: what is available here; ``--features``: every feature record with its kinds,
Case fields, checks, mutants and, per target (``targets.supports``; the ``mutant:*`` zoo left
out), whether it runs them. A target with ``releases`` / ``supports_at`` hooks (``sglang``) also
gets a per-release table computed from the records, importing nothing of the target.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from swafuzz import features, targets
from swafuzz.checks.registry import every_check
from swafuzz.harness.executors import available_executors
from swafuzz.kernels import available_impls
from swafuzz.targets.mutants import load_all, load_server


def support_targets() -> list[str]:
    """The targets the support columns ask: every offered target but the bug zoo."""
    return [t for t in targets.available_targets() if not t.startswith("mutant:")]


def mutant_counts() -> dict[str, int]:
    """Feature name -> the bug zoo's mutants whose first scenario kind it owns."""
    out = {f.name: 0 for f in features.all_features()}
    for spec in load_all().values():
        out[spec.feature] += 1
    return out


def entries(f) -> dict[str, list[dict]]:
    """Feature ``f``'s checks and mutants with their level (and a check's defence reason, a
    mutant's kinds and source)."""
    checks = [{"name": c.name, "level": c.level, "defence": c.defence}
              for c in every_check() if c.module in f.check_modules]
    muts = [{"name": n, "level": "component", "kinds": list(m.kinds), "source": m.source}
            for n, m in load_all().items() if m.feature == f.name]
    muts += [{"name": n, "level": "server", "kinds": list(m.kinds), "source": m.source}
             for n, m in load_server().items() if m.feature == f.name]
    return {"check_entries": checks, "mutant_entries": muts}


def _since(since: dict) -> dict[str, str]:
    """target -> the first release running it (``none``: no release is driven)."""
    return {t: s.release or "none" for t, s in since.items()}


def _release_hooks(name: str):
    f = targets.find_target(name)
    rel, at = getattr(f, "releases", None), getattr(f, "supports_at", None)
    return (rel(), at) if callable(rel) and callable(at) else None


def feature_rows() -> dict[str, Any]:
    """The records and every target's answers: ``{"targets", "releases": {target: [release]},
    "features": [{name, title, source, case_fields, checks, mutants, support: {target:
    reason|None}, kinds: [{name, summary, support, releases: {target: {release:
    reason|None}}}]}]}`` (a reason None: the target runs it)."""
    names = support_targets()
    hooks = {t: h for t in names if (h := _release_hooks(t)) is not None}
    counts = mutant_counts()
    rows = []
    for f in features.all_features():
        kinds = [{"name": k.name, "summary": k.summary, "level": k.level, "opt_in": k.opt_in,
                  "since": _since({**f.since, **k.since}),
                  "support": {t: targets.supports(t, k.name) for t in names},
                  "releases": {t: {r: at(k.name, r) for r in rels}
                               for t, (rels, at) in hooks.items()}} for k in f.kinds]
        rows.append({"name": f.name, "title": f.title, "source": f.source,
                     "case_fields": list(f.case_fields), "checks": list(f.checks),
                     "mutants": counts[f.name], "since": _since(f.since), **entries(f),
                     "support": {t: targets.supports(t, f) for t in names}, "kinds": kinds})
    return {"targets": names, "releases": {t: list(h[0]) for t, h in hooks.items()},
            "features": rows}


def _cell(reason: str | None) -> str:
    return "yes" if reason is None else "-"


def features_text(data: dict[str, Any], width: int = 100) -> str:
    """The table of :func:`feature_rows` as plain text: features and kinds with a support
    column per target, then one per-release table per target that has one, then the legend
    (why each ``-``)."""
    names = data["targets"]
    kw = max(len(k["name"]) for f in data["features"] for k in f["kinds"]) + 4
    cw = max([len(t) for t in names] + [3]) + 2
    lines = [f"{'feature / kind':<{kw}}" + "".join(f"{t:<{cw}}" for t in names),
             "-" * (kw + cw * len(names))]
    legend: dict[str, list[str]] = {}  # reason -> what it refuses
    for f in data["features"]:
        lines.append(f"{f['name']:<{kw}}" + "".join(f"{_cell(f['support'][t]):<{cw}}"
                                                     for t in names))
        since = ", ".join(f"{t} {r}" for t, r in f["since"].items()) or "every release"
        lines += textwrap.wrap(
            f"{f['title']}; case fields: {', '.join(f['case_fields']) or '-'}; checks: "
            f"{_by_level(f['check_entries'])}; mutants: {_by_level(f['mutant_entries'])}; "
            f"since: {since}", width, initial_indent="    ", subsequent_indent="    ")
        for k in f["kinds"]:
            lines.append(f"  {k['name']:<{kw - 2}}" + "".join(f"{_cell(k['support'][t]):<{cw}}"
                                                               for t in names))
            for t in names:
                if k["support"][t]:
                    legend.setdefault(k["support"][t], []).append(f"{t}: {k['name']}")
    nkinds = sum(len(f["kinds"]) for f in data["features"])
    for why, keys in legend.items():  # one reason for all kinds of a target: say so once
        if len(keys) == nkinds and len({k.split(":")[0] for k in keys}) == 1:
            legend[why] = [keys[0].split(":")[0] + ": every kind"]
    for t, rels in data["releases"].items():
        short = [r.rsplit(".", 1)[-1] if r.count(".") == 2 else r for r in rels]
        lines += ["", f"target {t} per release ({rels[0]} .. {rels[-1]}; columns: the last "
                      "version component; '-': refused, why below)",
                  f"{'kind':<{kw}}" + " ".join(f"{s:>3}" for s in short),
                  "-" * (kw + 4 * len(rels))]
        for f in data["features"]:
            for k in f["kinds"]:
                ans = k["releases"][t]
                lines.append(f"{k['name']:<{kw}}" + " ".join(
                    f"{'yes' if ans[r] is None else '-':>3}" for r in rels))
                refused = [r for r in rels if ans[r]]
                if refused:  # the reason at the newest release refusing it
                    legend.setdefault(ans[refused[-1]], []).append(
                        f"{t} {refused[0]}..{refused[-1]}")
    if legend:
        lines += ["", "why '-':"]
        for why, keys in legend.items():
            lines += textwrap.wrap(f"{'; '.join(keys)}: {why}", width, initial_indent="  ",
                                   subsequent_indent="      ")
    return "\n".join(lines)


def _by_level(items: list[dict]) -> str:
    """``name, name (server)``: entries with their level when it is not the component's."""
    return ", ".join(i["name"] + ("" if i["level"] == "component" else f" ({i['level']})")
                     for i in items) or "-"


def features_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True)


def summary_text(width: int = 100) -> str:
    """Plain ``swafuzz list``: a table of the targets (where each comes from; the bug zoo
    counted, listed by ``--mutants``), a table of the scenario kinds (level, feature, whether
    a campaign runs it by default), the checks by level, the kernels and executors here."""
    names = sorted(targets.available_targets())
    zoo = [n for n in names if n.startswith("mutant:")]
    lines = ["targets (details: swafuzz list --target NAME)"]
    for n in [n for n in names if not n.startswith("mutant:")]:
        o = targets.origin(n)
        where = "built in"
        if o:
            dist = f" ({o['dist']} {o.get('version') or ''})".rstrip() if o.get("dist") else ""
            where = f"plugin target: module {o['module']}{dist}" + (
                f", entry point {o['entry_point']!r}" if o.get("entry_point") else "")
        lines.append(f"  {n:<24}{where}")
    lines.append(f"  {'mutant:NAME':<24}the bug zoo: {len(zoo)} mutant targets "
                 "(swafuzz list --mutants)")
    rows = [(k.name, k.level, f.name, "default" if k.level == "component" and k.default
             else "when named") for f in features.all_features() for k in f.kinds]
    kw = max(len(r[0]) for r in rows) + 2
    fw = max(len(r[2]) for r in rows) + 2
    lines += ["", "scenario kinds (swafuzz run --scenario KIND; server level: --level server)",
              f"  {'kind':<{kw}}{'level':<11}{'feature':<{fw}}runs",
              *(f"  {k:<{kw}}{lv:<11}{fn:<{fw}}{d}" for k, lv, fn, d in rows)]
    levels: dict[str, list[str]] = {}
    for c in every_check():
        levels.setdefault(c.level, []).append(c.name)
    lines += ["", "checks (swafuzz list --features: which feature holds each)"]
    for lv, cs in levels.items():
        lines += textwrap.wrap(", ".join(cs), width, initial_indent=f"  {lv + ':':<11}",
                               subsequent_indent=" " * 13)
    lines += ["", f"implementations: {', '.join(available_impls())}",
              f"executors:       {', '.join(available_executors())}"]
    return "\n".join(lines)


def mutants_text(width: int = 100) -> str:
    """``swafuzz list --mutants``: the bug zoo (``--target mutant:NAME``, ``swafuzz zoo``) and
    the server mutants (``--level server --server-mutant NAME``), a row each: the feature, the
    kinds where the bug shows, and the source it reintroduces."""
    rows = [(f"mutant:{n}", "component", m.feature, ", ".join(m.kinds), m.source)
            for n, m in load_all().items()]
    rows += [(n, "server", m.feature, ", ".join(m.kinds), m.source)
             for n, m in load_server().items()]
    nw = max(len(r[0]) for r in rows) + 2
    fw = max(len(r[2]) for r in rows) + 2
    lines = textwrap.wrap(f"{len(rows)} mutants: component ones are targets (swafuzz run "
                          "--target mutant:NAME, swafuzz zoo); server ones patch the release "
                          "(swafuzz run --level server --server-mutant NAME, swafuzz zoo "
                          "--level server)", width)
    lines += [f"{'mutant':<{nw}}{'level':<11}{'feature':<{fw}}kinds: source"]
    for name, lv, feat, kinds, src in rows:
        lines += textwrap.wrap(f"{kinds}: {src}", max(width, nw + 11 + fw + 40),
                               initial_indent=f"{name:<{nw}}{lv:<11}{feat:<{fw}}",
                               subsequent_indent=" " * (nw + 11 + fw))
    return "\n".join(lines)
