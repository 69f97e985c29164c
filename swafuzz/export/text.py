"""The files of an export (:func:`render`): ``README.md`` for the maintainer, ``export.json`` (the
same, machine-readable) and the recipe's test file. Everything in SGLang's terms: ``ServerArgs``
names and their command-line flags, the environment, requests with their arrival step, prompt
and output lengths and attention-DP rank, the schedule the Case implies (which requests each
forward extends or decodes, at which positions), the release the bundle failed on, the first
bad release and the release that fixed it where a bisect record says so."""

from __future__ import annotations

import dataclasses
import json
import re

from swafuzz.harness.ledger.when import release_of
from swafuzz.server.case import ServerCase
from swafuzz.server.timeline import Forward, plan

PROJECT = "sglang"
#: the head of a bisect record's cannot-drive reason (``swafuzz repro: error: /abs/path: ``)
_REPRO_ERROR = re.compile(r"^swafuzz repro: error: \S+: ")


def release_of_bundle(b: dict) -> str:
    v = (b.get("release") or {}).get("version") or (b.get("versions") or {}).get(PROJECT) or ""
    return release_of(v) or v or "unknown"


def _vkey(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in v.replace(".post", ".").split("."))


def releases(b: dict, entry, bis: dict | None) -> dict:
    """``release`` (the bundle's), ``first_bad`` / ``fixed_in`` with where each comes from."""
    out = {"release": release_of_bundle(b), "ledger_releases": list(entry.releases) if entry
           else []}
    if bis is not None:
        ran = [o["release"] for o in bis["outcomes"] if o.get("state") != "cannot-drive"]
        out.update(first_bad=bis.get("first_bad"), fixed_in=bis.get("fixed_in"),
                   source=f"swafuzz bisect over {', '.join(ran) or 'no release'}",
                   cannot_drive={k: _REPRO_ERROR.sub("", str(v)) for k, v in
                                 sorted((bis.get("cannot_drive") or {}).items(), key=lambda kv:
                                        _vkey(kv[0]))})
    elif entry is not None and entry.releases:
        out.update(first_bad=min(entry.releases, key=_vkey), fixed_in=None,
                   source="the ledger entry's releases (no bisect record given)")
    else:
        out.update(first_bad=out["release"], fixed_in=None, source="the bundle's release only")
    return out


def _flag(k: str) -> str:
    return "--" + k.replace("_", "-")


def launch(case: ServerCase) -> dict:
    """The server's arguments: ``server_args`` (``ServerArgs`` keywords), ``env``, the
    ``command`` line (values and true flags) and ``left_false`` (the false booleans: the CLI
    has no flag for most; ``ServerArgs(...)`` takes them)."""
    args = {k: v for k, v in sorted(case.config.server_args().items()) if v is not None}
    env = dict(sorted(case.config.env_dict().items()))
    parts = [f"{k}={v}" for k, v in env.items()]
    parts += ["python", "-m", "sglang.launch_server", "--model-path", "MODEL"]
    for k, v in args.items():
        if v is True:
            parts.append(_flag(k))
        elif v is not False:
            parts += [_flag(k), str(v)]
    return {"server_args": args, "env": env, "command": " ".join(parts),
            "left_false": [k for k, v in args.items() if v is False]}


def schedules(case: ServerCase) -> list[list[str]]:
    """Per attention-DP rank (``Request.rank``), the Case's plan as lines: which requests each
    forward runs and the positions whose KV it writes."""
    n = max((getattr(r, "rank", 0) for r in case.requests), default=0) + 1
    out = []
    for k in range(n):
        ids = [i for i, r in enumerate(case.requests) if getattr(r, "rank", 0) == k]
        sub = dataclasses.replace(case, requests=tuple(
            dataclasses.replace(case.requests[i], rank=0) for i in ids)) if n > 1 else case
        lines = []
        for ev in plan(sub):
            if isinstance(ev, Forward):
                what = ", ".join(f"request {ids[r] if n > 1 else r} positions {s}..{s + c - 1}"
                                 for r, (s, c) in zip(ev.rids, ev.spans))
                lines.append(f"step {ev.step}: forward {ev.index} {ev.mode}: {what}")
            else:
                lines.append(f"step {ev.step}: {type(ev).__name__.lower()} "
                             f"{[ids[r] if n > 1 else r for r in ev.rids]}")
        out.append(lines)
    return out


def _unfixed(rel: dict) -> str:
    if rel["source"].startswith("swafuzz bisect"):
        return "none bisected (no release after the last bad one replays clean)"
    return "not known (no bisect record given)"


def _readme(path, b, case, entry, rel, lau, sched, rec) -> str:
    L = [f"# {rec.title}", "",
         f"Found by swafuzz on sglang {rel['release']} (bundle `{path}`, signature "
         f"`{b['signature']}`)" + (f"; ledger entry `{entry.id}` ({entry.cite})." if entry
                                   else "; no ledger entry knows it (a new finding)."), "",
         "## Releases", "",
         f"* failing release: {rel['release']}",
         f"* first bad release: {rel['first_bad']} ({rel['source']})",
         f"* fixed in: {rel['fixed_in'] or _unfixed(rel)}"]
    if rel.get("cannot_drive"):
        L.append(f"* not driven: {', '.join(f'{k} ({v})' for k, v in rel['cannot_drive'].items())}")
    if rel["ledger_releases"]:
        L.append(f"* ledger releases: {', '.join(rel['ledger_releases'])}")
    L += ["", "## Launch", "", "```sh", lau["command"], "```", "",
          "`ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in lau["server_args"].items()) + ")`"
          + (f"; environment {lau['env']}" if lau["env"] else ""), ""]
    if lau["left_false"]:
        L += [f"Set false (pass `--no-...` where the release's CLI offers it): "
              f"{', '.join(lau['left_false'])}.", ""]
    # the fields the Case sets (a field added later at its default changes no export)
    shape = ", ".join(f"{k}={v!r}" for k, v in case.to_json()["model"].items())
    L += [f"MODEL: swafuzz drives a stub model of shape ModelShape({shape}); on a GPU, a checkpoint "
          "whose architecture takes these arguments (see the notes below).",
          "", "## Requests", "", "| request | rank | arrives at step | prompt | max_new_tokens |",
          "|---|---|---|---|---|"]
    for i, r in enumerate(case.requests):
        L.append(f"| {i} | {getattr(r, 'rank', 0)} | {r.arrive_step} | {r.prompt_len} | "
                 f"{r.max_new_tokens} |")
    for k, lines in enumerate(sched):
        L += ["", f"Schedule, rank {k}:", ""] + [f"* {ln}" for ln in lines]
    L += ["", "## Where it fails", "", rec.where, "", "Functions on the failing path (call "
          "order; the culprit in bold):", ""]
    L += [f"* {'**' + f + '**' if f == rec.culprit else '`' + f + '`'}" for f in rec.functions]
    L += ["", "## Expected vs observed", "",
          "| rank | request | position | row | slot | expected | observed |",
          "|---|---|---|---|---|---|---|"]
    dash = "-"
    for r in rec.rows:
        L.append(f"| {dash if r.rank is None else r.rank} | "
                 f"{dash if r.request is None else r.request} | "
                 f"{dash if r.position is None else r.position} | "
                 f"{dash if r.row is None else r.row} | {dash if r.slot is None else r.slot} | "
                 f"{r.expected} | {r.observed} |")
    L += ["", "The bundle's failures (the release's run):", ""]
    L += [f"* {f.get('check')}, forward {f.get('forward')}: {f.get('message')}"
          for f in b["failures"]]
    L += ["", *rec.notes, "", "## The test", "",
          f"`{rec.test_name}` imports sglang only and runs on CPU (`python -m pytest "
          f"{rec.test_name}`; it fits SGLang's `test/` tree). It fails on sglang "
          f"{rel['release']}" + (f" and passes on {rel['fixed_in']}" if rel["fixed_in"] else "")
          + (" and passes with the fix below applied." if rec.fix else "."), ""]
    if rec.fix:
        L += ["## Fix", "", f"In `{rec.fix.module}:{rec.fix.qualname}` replace", "",
              "```python", rec.fix.old, "```", "", "with", "", "```python", rec.fix.new, "```",
              "", f"({rec.fix.why}; `fix.json`).", ""]
    return "\n".join(L).rstrip() + "\n"


def render(path: str, b: dict, case: ServerCase, entry, bis, rec) -> dict[str, str]:
    """``{file name: text}`` of the export (module docstring)."""
    rel = releases(b, entry, bis)
    lau = launch(case)
    sched = schedules(case)
    data = {"export_version": 1, "bundle": path, "signature": b["signature"],
            "ledger_entry": entry.id if entry else None, "releases": rel, "launch": lau,
            "requests": case.to_json()["requests"], "schedule": sched,
            "failures": b["failures"], "recipe": rec.to_json(), "test_file": rec.test_name,
            "fix_file": "fix.json" if rec.fix else None}
    return {"README.md": _readme(path, b, case, entry, rel, lau, sched, rec),
            "export.json": json.dumps(data, indent=1, sort_keys=True) + "\n",
            rec.test_name: rec.test_source}
