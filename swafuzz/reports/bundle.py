"""Case bundles: one JSON file per distinct finding, written atomically before the next case runs.

A bundle holds the (shrunk) Case, the finding's signature and message, the target /
implementation / executor it failed on, the versions of the stack, and the one-line repro
command. ``swafuzz repro FILE`` replays it on any machine.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import tempfile
from importlib import metadata
from typing import Any, Callable

from swafuzz import __version__

BUNDLE_VERSION = 1
#: the ``bundle_version`` values :func:`read_bundle` reads (a bundle without one is version 1)
SUPPORTED_BUNDLE_VERSIONS = (1,)


def signature_filename(signature: str) -> str:
    """A file-system-safe name for a signature like ``write_targets/decode/live``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", signature).strip("_") or "finding"


def versions() -> dict[str, str]:
    """Versions of Python, swafuzz and its stack (installed distributions, read from their
    metadata: reports never import torch), and the device when the process has torch loaded."""
    out = {"python": platform.python_version()}
    for dist in ("swafuzz", "torch", "triton", "hypothesis"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # a missing package is just not reported
            pass
    torch = sys.modules.get("torch")  # loaded by whoever ran the case, never imported here
    if torch is not None:
        try:
            out["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        except Exception:  # noqa: BLE001
            pass
    return out


def current_umask() -> int:
    """This process's umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def version_text() -> str:
    """``swafuzz --version``: ``swafuzz X (python V, torch V, triton V, hypothesis V[, sglang
    V])`` from the installed distributions' metadata, nothing imported (SGLang only when
    installed)."""
    found = versions()
    parts = [f"python {found['python']}"]
    for dist in ("torch", "triton", "hypothesis"):
        parts.append(f"{dist} {found.get(dist, 'not installed')}")
    try:
        parts.append(f"sglang {metadata.version('sglang')}")
    except metadata.PackageNotFoundError:
        pass
    return f"swafuzz {__version__} ({', '.join(parts)})"


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that readers never see a half-written file; the file's
    mode is the umask's usual one (0644 under umask 022), as a plain ``open`` would give."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
    try:
        # mkstemp creates 0600; the file gets what open() would give it (0666 less the umask)
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str, obj: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


def write_bundle(out_dir: str, finding: dict[str, Any], suffix: str = "") -> str:
    """Write ``finding`` (must hold ``signature`` and ``case``) as
    ``out_dir/findings/<signature><suffix>.json``; return the path. ``command`` is the repro
    command relative to ``out_dir`` (true wherever the run directory is copied); ``versions``
    are swafuzz's own plus the finding's (what its target's ``versions`` hook answered: the
    caller asks the target, this module never names one)."""
    path = os.path.join(out_dir, "findings",
                        signature_filename(finding["signature"]) + suffix + ".json")
    vers = {**versions(), **(finding.get("versions") or {})}
    bundle = {"bundle_version": BUNDLE_VERSION, **finding, "versions": vers}
    bundle["command"] = "swafuzz repro " + "/".join(("findings", os.path.basename(path)))
    atomic_write_text(path, json.dumps(bundle, indent=1, sort_keys=True) + "\n")
    return path


def read_bundle(path: str) -> dict[str, Any]:
    """Load a bundle; raises ``ValueError`` naming what is wrong (the caller exits 2)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read bundle ({e.strerror})") from None
    except UnicodeDecodeError as e:  # a binary file: not a bundle
        raise ValueError(f"{path}: not a bundle: not UTF-8 text (byte {e.start}: "
                         f"{e.reason}); a bundle is a JSON file") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: a bundle must be a JSON object")
    version = obj.get("bundle_version", 1)
    if type(version) is not int or version not in SUPPORTED_BUNDLE_VERSIONS:
        raise ValueError(f"{path}: field 'bundle_version': {version!r} is not supported; "
                         f"supported: {', '.join(map(str, SUPPORTED_BUNDLE_VERSIONS))} (a newer "
                         "swafuzz wrote it? replay it with that version)")
    if "case" not in obj:
        raise ValueError(f"{path}: field 'case' is required (the Case to replay)")
    plugin = obj.get("plugin")
    if plugin is not None and not (isinstance(plugin, dict)
                                   and all(isinstance(plugin.get(k), (str, type(None)))
                                           for k in ("module", "entry_point", "dist"))):
        raise ValueError(f"{path}: field 'plugin' must be null or an object with a 'module' "
                         f"(and 'entry_point') string, the plugin record of the target "
                         f"(got {json.dumps(plugin)[:60]})")
    return obj


def smaller_there(path: str, rec: dict[str, Any], size: Callable[[dict], tuple]) -> bool:
    """One bundle per signature and suffix: does the bundle already at ``path`` (another
    unit's) hold a Case no larger than ``rec``'s (``size`` of a Case's JSON)?"""
    try:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        return size(old["case"]) <= size(rec["case"])
    except (OSError, ValueError, KeyError):
        return False
