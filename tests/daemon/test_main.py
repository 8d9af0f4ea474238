"""`mcpcli.daemon.__main__` runs the daemon only as `python -m mcpcli.daemon`: importing every
module (what scripts/test's oldest-Python check does) ran a daemon in the foreground, which
printed its "no session was opened" line on the importer's stderr 30 s later and ended the
import loop with exit 0, the modules after it never imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WALK = """
import importlib, pkgutil, mcpcli
names = [m.name for m in pkgutil.walk_packages(mcpcli.__path__, "mcpcli.")]
for name in names:
    importlib.import_module(name)
print(len(names), "imported")
"""


def test_importing_every_module_runs_no_daemon(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "MCPCLI_RUNTIME_DIR": str(run_dir)}
    done = subprocess.run([sys.executable, "-c", WALK], capture_output=True, text=True, timeout=25,
                          stdin=subprocess.DEVNULL, env=env, cwd=tmp_path)
    assert done.returncode == 0, done
    assert done.stdout.strip().endswith("imported"), done
    assert "mcpcli.daemon" not in done.stderr
    assert not run_dir.exists()  # no daemon made its run directory
