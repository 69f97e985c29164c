"""The bug zoo's names without loading it: read from the source of the modules the feature
records list (``Feature.mutants``), so a mistyped ``--target mutant:X``, ``--mutant X`` or
``--server-mutant X`` is answered before torch loads (:mod:`swafuzz.harness.cli.precheck`).

A mutant is declared by a call ``mutant("name", ...)`` (a decorator or a plain call,
:func:`swafuzz.targets.mutants.mutant`); ``level="server"`` makes it a server mutant; a call
``register("mutant:name", ...)`` registers a target outside the zoo. A name
given by the loop variable of a ``for`` over a module-level tuple of tuples is read from the
tuple. Any other declaration cannot be read this way: :func:`declared` then returns None and
the callers ask the loaded zoo instead (tests/harness/test_precheck.py holds the two equal).
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache

from swafuzz import features

__all__ = ["declared"]


@lru_cache(maxsize=None)
def declared() -> dict[str, str] | None:
    """Every mutant the records' modules declare: name -> level (``component`` or ``server``;
    ``target``: a full target name ``register``-ed there outside the zoo); None when a declaration is not readable from the source (see the module docstring)."""
    out: dict[str, str] = {}
    for f in features.all_features():
        for ref in f.mutants:
            spec = importlib.util.find_spec(ref)  # imports only its feature folder (a record)
            if spec is None or not spec.origin:
                return None
            with open(spec.origin, encoding="utf-8") as fh:
                got = _scan(ast.parse(fh.read()))
            if got is None:
                return None
            out.update(got)
    return out


def _scan(tree: ast.Module) -> dict[str, str] | None:
    tuples = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func) == "register":  # a target of
            first = node.args[0] if node.args else None  # its own, outside the zoo
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                return None
            out[first.value] = "target"
            continue
        if not (isinstance(node, ast.Call) and _called(node.func) == "mutant"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        lv = kw.get("level")
        if lv is not None and not (isinstance(lv, ast.Constant) and isinstance(lv.value, str)):
            return None
        level = lv.value if lv is not None else "component"
        first = node.args[0] if node.args else kw.get("name")
        names = _names(first, node, parents, tuples)
        if names is None:
            return None
        out.update(dict.fromkeys(names, level))
    return out


def _called(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else None)


def _names(arg, node, parents, tuples) -> list[str] | None:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if not isinstance(arg, ast.Name):
        return None
    p = parents.get(node)
    while p is not None and not isinstance(p, ast.For):
        p = parents.get(p)
    if p is None or not isinstance(p.iter, ast.Name) or p.iter.id not in tuples:
        return None
    target = p.target
    pos = 0 if isinstance(target, ast.Name) and target.id == arg.id else next(
        (i for i, e in enumerate(getattr(target, "elts", ()))
         if isinstance(e, ast.Name) and e.id == arg.id), None)
    rows = tuples[p.iter.id]
    if pos is None or not isinstance(rows, (ast.Tuple, ast.List)):
        return None
    names = []
    for row in rows.elts:
        item = row.elts[pos] if isinstance(row, (ast.Tuple, ast.List)) and \
            len(row.elts) > pos else (row if pos == 0 and not isinstance(target, ast.Tuple)
                                      else None)
        if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
            return None
        names.append(item.value)
    return names
