"""External targets through the plugin seam, with a plugin package really installed.

``tests/data/plugin_pkg`` (distribution ``swafuzz-example-plugin``) declares two targets in the
``swafuzz.targets`` entry-point group; ``example:memo`` has a planted bug (a translation memo keyed
by batch size). It is pip-installed into a fresh venv (``overlay_venv``); then, from a directory
outside the checkout: ``swafuzz list`` shows it, a 50-case campaign with worker isolation finds
the bug, the bundle names the plugin, ``repro`` in a fresh process replays it, and ``repro``
where the plugin is missing exits 2 naming it. ``--plugin`` / ``SWAFUZZ_PLUGINS`` load unpackaged
code the same way, and a target defined in a launcher's ``__main__`` is refused with a message
instead of looping on worker restarts.

Reproduce: ``pytest tests/install/test_plugin_install.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import DATA, clean_env, pip_into, sh, venv_python

pytestmark = pytest.mark.install


@pytest.fixture
def plugin_venv(overlay_venv: Path, tmp_path: Path) -> Path:
    pip_into(overlay_venv, "--no-deps", "--no-build-isolation", DATA / "plugin_pkg", cwd=tmp_path)
    return overlay_venv


def test_entry_point_plugin_campaign_and_repro(plugin_venv: Path, tmp_path: Path):
    py = venv_python(plugin_venv)
    r = sh([py, "-m", "swafuzz", "list"], cwd=tmp_path)
    assert "example:memo" in r.stdout and "example:clean" in r.stdout
    assert "swafuzz-example-plugin 0.1.0" in r.stdout

    out = tmp_path / "out"
    r = sh([py, "-m", "swafuzz", "run", "--target", "example:memo", "--examples", "50",
            "--scenario", "decode", "--impl", "torch", "--out", out, "--quiet"], cwd=tmp_path,
           check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    bundles = sorted((out / "findings").glob("*.json"))
    assert bundles, r.stdout
    b = json.loads(bundles[0].read_text())
    assert b["target"] == "example:memo"
    assert b["plugin"]["dist"] == "swafuzz-example-plugin"
    assert b["plugin"]["entry_point"] == "example:memo"

    # replay in a fresh process: the bundle alone is enough
    r = sh([py, "-m", "swafuzz", "repro", bundles[0]], cwd=tmp_path, check=False)
    assert r.returncode == 1 and r.stdout.startswith("FAIL"), r.stdout + r.stderr
    # where the plugin is not installed: exit 2, naming it, nothing else
    r = sh([sys.executable, "-m", "swafuzz", "repro", bundles[0]], cwd=tmp_path, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "swafuzz_example_plugin" in r.stderr and "swafuzz-example-plugin" in r.stderr
    assert "Traceback" not in r.stderr

    # the clean target of the same plugin passes
    r = sh([py, "-m", "swafuzz", "run", "--target", "example:clean", "--examples", "7",
            "--impl", "torch", "--out", tmp_path / "clean", "--quiet"], cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_plugin_module_and_env_variable(tmp_path: Path):
    """Unpackaged code: ``--plugin MODULE`` and ``SWAFUZZ_PLUGINS`` (module on PYTHONPATH)."""
    mod = tmp_path / "src" / "my_swafuzz_targets.py"
    mod.parent.mkdir()
    mod.write_text(
        "from swafuzz.targets import register\n"
        "from swafuzz_example_plugin import LengthMemoEngine\n"
        "register('mine:memo', LengthMemoEngine)\n")
    env = clean_env(PYTHONPATH=f"{mod.parent}{':'}{DATA / 'plugin_pkg'}")
    args = ["run", "--target", "mine:memo", "--examples", "30", "--scenario", "decode",
            "--impl", "torch", "--quiet"]
    r = sh([sys.executable, "-m", "swafuzz", *args, "--plugin", "my_swafuzz_targets",
            "--out", tmp_path / "a"], cwd=tmp_path, env=env, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    b = json.loads(next((tmp_path / "a" / "findings").glob("*.json")).read_text())
    assert b["plugin"]["module"] == "my_swafuzz_targets"
    r = sh([sys.executable, "-m", "swafuzz", *args, "--out", tmp_path / "b"], cwd=tmp_path,
           env=dict(env, SWAFUZZ_PLUGINS="my_swafuzz_targets"), check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    # the bundle's plugin is found again through --plugin / SWAFUZZ_PLUGINS by repro
    bundle = next((tmp_path / "b" / "findings").glob("*.json"))
    r = sh([sys.executable, "-m", "swafuzz", "repro", bundle], cwd=tmp_path, env=env,
           check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    r = sh([sys.executable, "-m", "swafuzz", "list", "--plugin", "no_such_plugin_mod"],
           cwd=tmp_path, env=env, check=False)
    assert r.returncode == 2 and "no_such_plugin_mod" in r.stderr
    assert "Traceback" not in r.stderr


def test_launcher_registering_in_main_is_refused_not_looped(tmp_path: Path):
    """A script (no ``if __name__ == '__main__'`` guard) that registers a target defined in its
    own ``__main__`` and runs an isolated campaign: a clear error, no worker restarts."""
    script = tmp_path / "launch.py"
    script.write_text(
        "import sys\n"
        "from swafuzz.targets import register\n"
        "from swafuzz.targets.engine import UnifiedEngine\n"
        "class Mine(UnifiedEngine):\n    pass\n"
        "register('mine:main', Mine)\n"
        "from swafuzz.harness.cli.commands import main\n"
        "print('LAUNCHED', flush=True)\n"
        "sys.exit(main(['run', '--target', 'mine:main', '--examples', '2', '--out', "
        f"{str(tmp_path / 'o')!r}]))\n")
    r = sh([sys.executable, script], cwd=tmp_path, check=False, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.count("LAUNCHED") == 1
    assert "__main__" in r.stderr and "--plugin" in r.stderr
    # ... while an importable module's target runs isolated in the worker
    (tmp_path / "mymod.py").write_text(
        "from swafuzz.targets.engine import UnifiedEngine\nclass Mine(UnifiedEngine):\n    pass\n")
    script.write_text(
        "import sys\n"
        "from swafuzz.targets import register\n"
        "from mymod import Mine\n"
        "register('mine:mod', Mine)\n"
        "from swafuzz.harness.cli.commands import main\n"
        "print('LAUNCHED', flush=True)\n"
        "sys.exit(main(['run', '--target', 'mine:mod', '--examples', '7', '--impl', 'torch', "
        f"'--quiet', '--out', {str(tmp_path / 'p')!r}]))\n")
    r = sh([sys.executable, script], cwd=tmp_path, check=False, timeout=300,
           env=clean_env(PYTHONPATH=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("LAUNCHED") == 1
