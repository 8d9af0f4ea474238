"""JSON (and TOML, YAML) nested too deeply for the parser's recursion, from every reader of
outside files and other programs' output: each gives its own clean error, never a
RecursionError ("internal error ... please report this")."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import mcp_in

from mcpcli import jsonedit
from mcpcli.core import jsonrpc
from mcpcli.errors import AuthError, RPCError

DEEP = "[" * 200_000 + "]" * 200_000
DEEP_OBJECT = '{"mcpServers": ' + DEEP + "}"


def test_the_shared_reader_takes_text_and_bytes() -> None:
    for value in (DEEP, DEEP.encode()):
        with pytest.raises(ValueError, match="nested too deeply"):
            jsonrpc.loads(value)
    assert jsonrpc.loads(b'{"a": [1]}') == {"a": [1]}
    with pytest.raises(UnicodeDecodeError):  # a ValueError, as every caller expects
        jsonrpc.loads(b"\xff\xfe\xfd")


def test_our_config_file(isolated_env: Path) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(DEEP_OBJECT)
    r = mcp_in("servers", "list")
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == f"mcp: error: {path}: invalid JSON: nested too deeply"


@pytest.mark.parametrize(("base", "where", "text"), [
    ("HOME", ".cursor/mcp.json", DEEP_OBJECT),
    ("HOME", ".codex/config.toml", "a = " + DEEP),
    ("XDG_CONFIG_HOME", "goose/config.yaml", "extensions: " + DEEP),
], ids=["json", "toml", "yaml"])
def test_another_clients_config_is_a_problem_reported_not_a_crash(
    isolated_env: Path, base: str, where: str, text: str
) -> None:
    path = Path(os.environ[base]) / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    assert [p["message"] for p in r.json["problems"]] == ["cannot read: nested too deeply"]


def test_install_into_a_deeply_nested_file_is_refused_cleanly(isolated_env: Path) -> None:
    path = isolated_env / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(DEEP_OBJECT)
    r = mcp_in("servers", "install", "x", "--into", "cursor", "--", "echo")
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == f"mcp: error: cannot edit {path}: not JSON (nested too deeply)"
    # Deeper than the editor goes but within the parser's reach: refused by the editor.
    nested = '{"deep": ' + "[" * 300 + "]" * 300 + ', "mcpServers": {}}'
    path.write_text(nested)
    r = mcp_in("servers", "install", "x", "--into", "cursor", "--", "echo")
    assert r.code == 2, r
    assert f"nested more than {jsonedit.MAX_DEPTH} deep" in r.stderr
    assert path.read_text() == nested


def test_the_sign_in_index_and_token_file(isolated_env: Path) -> None:
    from mcpcli.auth import has_stored_sign_in
    from mcpcli.auth.store import read_private_json

    index = Path(os.environ["XDG_STATE_HOME"]) / "mcpcli" / "auth" / "servers.json"
    index.parent.mkdir(parents=True)
    index.write_text(DEEP)
    assert has_stored_sign_in("https://example.com/mcp") is False
    index.chmod(0o600)
    assert read_private_json(index) == {}  # damaged: moved aside, started afresh
    assert [p.name.startswith("servers.json.damaged-") for p in index.parent.iterdir()] == [True]


def test_the_listing_cache(isolated_env: Path) -> None:
    from mcpcli import cache

    cache.store("srv", "tools/list", {"tools": []})
    assert cache.load("srv", "tools/list") is not None
    cache._path("srv", "tools/list").write_text(DEEP)
    assert cache.load("srv", "tools/list") is None


def test_a_headers_helpers_output() -> None:
    from mcpcli.headers_helper import parse_headers

    with pytest.raises(AuthError, match="printed neither a JSON object"):
        parse_headers(('{"a": ' + DEEP + "}").encode(), what="srv")


def test_a_sampling_commands_output_is_taken_as_text() -> None:
    from mcpcli.sampling import _as_result

    out = '{"content": ' + DEEP + "}"
    assert _as_result(out, "m")["content"] == {"type": "text", "text": out}


def test_a_prompt_commands_output() -> None:
    from mcpcli.toolsfile.prompts import _prompt_output

    prompt = SimpleNamespace(output_format="mcp", name="p", description=None)
    with pytest.raises(RPCError, match="not JSON: nested too deeply"):
        _prompt_output(prompt, DEEP)  # type: ignore[arg-type]


def test_a_daemon_control_line() -> None:
    from mcpcli.core.localrpc import ProtocolViolation, decode

    with pytest.raises(ProtocolViolation, match="nested too deeply"):
        decode(DEEP.encode())


def test_elicit_json_on_the_command_line() -> None:
    r = mcp_in("tools", "list", "--elicit-json", DEEP, "--", sys.executable, "-c", "pass")
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == "mcp: error: --elicit-json: invalid JSON: nested too deeply"
