"""Probe an environment for the ``sglang`` target: does it import the modules the adapter
drives, and what does the installed release have?

    python -m swafuzz.targets.sglang.detect [--expect VERSION]

Prints one JSON object: ``version``, ``ok``, and either ``family``, ``found``
(:func:`swafuzz.targets.sglang.features.describe`) and ``features_found`` (the features' facts),
or ``cause`` (the module that failed, the release file importing it, the exception) and
``advice``. Exit 0 when the adapter imports, 3 when not, 2 when ``--expect`` names another
version. It reads the release through the adapter's own import, so it says what a run will meet
(``scripts/upstream-env`` runs it on every environment).
"""

from __future__ import annotations

import json
import sys
import traceback

from swafuzz.features import load
from swafuzz.targets.protocol import TargetUnavailable
from swafuzz.targets.sglang import installed_version
from swafuzz.targets.sglang.target import FOUND

#: module -> the distribution that provides it, where the names differ (the advice names it)
DISTRIBUTION = {"cutlass": "nvidia-cutlass-dsl (the release's own pin, without its CUDA extra)",
                "zmq": "pyzmq", "PIL": "pillow", "yaml": "pyyaml"}
#: modules that no CPU environment of the range provides, with what to do instead of building
#: again (a GPU-only dependency that a release imports at module level)
GPU_ONLY = {"flashinfer": "flashinfer is CUDA-only", "deep_gemm": "deep_gemm is CUDA-only",
            "sgl_kernel": "sgl_kernel ships CUDA wheels only",
            "flash_mla": "flash_mla is CUDA-only"}


def _origin(tb) -> str:
    """The last frame of the traceback inside the sglang package: the release file whose
    import failed (``path:line``), or ''."""
    where = ""
    for frame in traceback.extract_tb(tb):
        if "/sglang/" in frame.filename:
            where = f"{frame.filename.split('/site-packages/')[-1]}:{frame.lineno}"
    return where


def advice_for(version: str, missing: str | None) -> str:
    top = (missing or "").split(".")[0]
    if top in GPU_ONLY:
        return (f"sglang {version} imports {missing} at module level on the DSV4 path and "
                f"{GPU_ONLY[top]}: this release cannot run on a CPU machine here; rebuilding "
                "will not help. Check it on a GPU machine, or use a neighbouring release "
                "(python -m swafuzz.targets.sglang.matrix VERSION shows what each drives)")
    if missing:
        dist = DISTRIBUTION.get(top, top)
        return (f"the environment lacks {missing}, which sglang {version} imports at module "
                f"level: add {dist} to scripts/upstream-env (COMMON for every release, "
                "RANGE_EXTRA or OWN_IF_NEEDED for this range); the edited script rebuilds the "
                "release's layer")
    return (f"sglang {version}'s modules raised while importing: read the cause above; a "
            "rebuild of the same environment will fail the same way")


def probe() -> dict:
    version = installed_version()
    if version is None:
        return {"version": None, "ok": False, "cause": "sglang is not installed",
                "advice": "build the environment with scripts/upstream-env VERSION"}
    try:
        features = load(FOUND)  # imports SGLang (an optional dependency), by reference
    except TargetUnavailable as e:
        cause = e.__cause__ or e.__context__
        missing = getattr(cause, "name", None) if isinstance(cause, ImportError) else None
        where = _origin(cause.__traceback__) if cause is not None else ""
        return {"version": version, "ok": False, "missing": missing,
                "cause": str(e) + (f" (raised in {where})" if where else ""),
                "advice": advice_for(version, missing) if missing else
                "the release lacks a seam the adapter needs (named above): the adapter cannot "
                "drive it; a rebuild will not change that"}
    except ImportError as e:
        return {"version": version, "ok": False, "missing": e.name,
                "cause": f"{type(e).__name__}: {e} (imported from {_origin(e.__traceback__)})",
                "advice": advice_for(version, e.name)}
    rows = dict(features.describe())
    own = {k for f in features.FACTS if f.describe is not None for k, _ in f.describe(features)}
    return {"version": version, "ok": True, "family": features.FAMILY,
            "found": {k: v for k, v in rows.items() if k not in own},
            "features_found": {k: v for k, v in rows.items() if k in own}}


def main(argv: list[str]) -> int:
    expect = None
    if argv[:1] == ["--expect"] and len(argv) == 2:
        expect = argv[1]
    elif argv:
        print("usage: python -m swafuzz.targets.sglang.detect [--expect VERSION]",
              file=sys.stderr)
        return 2
    got = probe()
    print(json.dumps(got, indent=1, sort_keys=True))
    if expect is not None and got["version"] != expect:
        print(f"detect: this environment has sglang {got['version']}, not {expect}",
              file=sys.stderr)
        return 2
    if not got["ok"]:
        print(f"detect: sglang {got['version']}: {got['cause']}\nadvice: {got['advice']}",
              file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
