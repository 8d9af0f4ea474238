"""An optional dependency that is not installed (`pip install .` without the extra) is one
line naming the extra, exit 2, never "internal error: ModuleNotFoundError". The import is
made to fail by putting None in `sys.modules` for the package (and what of it is loaded).
`private_key_jwt` (the `jwt` extra) is in tests/auth/test_machine_grants.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import mcp_in

from mcpcli.errors import ExitCode, MissingExtra, optional_import

TOOLS = "version: 1\ntools:\n  - name: t\n    description: t\n    run: {argv: [echo]}\n"


def block(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    """Make `import package` (and any of its modules) fail as if it were not installed."""
    for name in [n for n in sys.modules if n.startswith(package + ".")] + [package]:
        monkeypatch.setitem(sys.modules, name, None)


def test_redis_task_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tools = tmp_path / "tools.yaml"
    tools.write_text(TOOLS)
    block(monkeypatch, "redis")
    r = mcp_in("serve", str(tools), "--task-store", "redis://127.0.0.1:9/0", input="")
    assert r.code == ExitCode.USAGE == 2, r
    assert r.stderr == ("mcp: error: --task-store redis needs the redis package, which is not installed: "
                        "pip install 'mcpcli[redis]'\n")


@pytest.mark.parametrize("variable", ["ALL_PROXY", "https_proxy"])
def test_a_socks_proxy(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    block(monkeypatch, "socksio")
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    r = mcp_in("tools", "list", "https://mcp.example.invalid/mcp", env={variable: "socks5://127.0.0.1:9"})
    assert r.code == 2, r
    message = (f"the SOCKS proxy in {variable.upper()} needs the socksio package, which is not installed: "
               "pip install 'mcpcli[socks]'")
    assert r.stderr == f"mcp: error: {message}\n"
    r = mcp_in("tools", "list", "https://mcp.example.invalid/mcp", "--json", env={variable: "socks5://127.0.0.1:9"})
    assert r.code == 2, r
    assert json.loads(r.stderr) == {"error": {"type": "missing-extra", "message": message, "exitCode": 2}}


def test_only_a_missing_package_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "halfinstalled.py").write_text("import a_dependency_nobody_has_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_dependency_nobody_has_xyz"):
        optional_import("halfinstalled", extra="x", feature="f")  # a broken install is a bug: raised as is
    with pytest.raises(MissingExtra, match=r"f needs the not_here_xyz package, .*: pip install 'mcpcli\[x\]'"):
        optional_import("not_here_xyz.sub", extra="x", feature="f")
    assert optional_import("json", extra="x", feature="f") is sys.modules["json"]
