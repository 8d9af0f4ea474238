"""keepAlive, idleTimeout and restart on a configured server: parsed, defaulted, refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_in

from mcpcli.config import DEFAULT_IDLE_TIMEOUT, Config, normalize_entry, parse_duration
from mcpcli.errors import ConfigError


def entry(**fields: Any) -> Any:
    return normalize_entry("ev", {"command": "node", **fields}, source="mcp.json")


def test_an_entry_without_session_fields_is_one_shot() -> None:
    parsed = entry()
    assert (parsed.keep_alive, parsed.idle_timeout, parsed.restart) == (False, None, "no")


def test_keep_alive_defaults_to_a_thirty_minute_idle_timeout() -> None:
    parsed = entry(keepAlive=True)
    assert parsed.keep_alive is True
    assert parsed.idle_timeout == DEFAULT_IDLE_TIMEOUT == 1800.0


@pytest.mark.parametrize(
    ("value", "seconds"), [("30m", 1800.0), ("90s", 90.0), ("2h", 7200.0), ("1.5h", 5400.0), (45, 45.0), ("10", 10.0)]
)
def test_idle_timeout_takes_s_m_h_suffixes_or_seconds(value: Any, seconds: float) -> None:
    assert entry(keepAlive=True, idleTimeout=value).idle_timeout == seconds


def test_idle_timeout_never_or_null_keeps_the_session() -> None:
    assert entry(keepAlive=True, idleTimeout="never").idle_timeout is None
    assert entry(keepAlive=True, idleTimeout=None).idle_timeout is None


def test_restart_on_failure_and_url_entries() -> None:
    parsed = normalize_entry(
        "remote", {"url": "https://example.com/mcp", "keepAlive": True, "restart": "on-failure"},
        source="mcp.json",
    )
    assert (parsed.transport, parsed.keep_alive, parsed.restart) == ("http", True, "on-failure")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"keepAlive": "yes"}, "keepAlive must be true or false"),
        ({"keepAlive": True, "idleTimeout": "soon"}, 'idleTimeout must be a duration such as "30m"'),
        ({"keepAlive": True, "idleTimeout": "5d"}, "idleTimeout must be a duration"),
        ({"keepAlive": True, "idleTimeout": 0}, "idleTimeout must be a positive duration"),
        ({"keepAlive": True, "idleTimeout": -3}, "idleTimeout must be a positive duration"),
        ({"keepAlive": True, "idleTimeout": True}, "idleTimeout must be a duration"),
        ({"restart": "always"}, 'restart must be one of "no", "on-failure", not \'always\''),
    ],
)
def test_bad_session_fields_are_config_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="server 'ev'") as caught:
        entry(**fields)
    assert message in caught.value.message


def test_parse_duration_refuses_infinity() -> None:
    with pytest.raises(ConfigError):
        parse_duration(float("inf"), what="x")


def test_session_fields_survive_resolving_and_are_written_back(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    doc = {"mcpServers": {"ev": {"command": "node", "keepAlive": True, "idleTimeout": "5m",
                                 "restart": "on-failure"}}}
    path.write_text(json.dumps(doc))
    config = Config(path)
    found = config.get("ev")
    assert found is not None
    resolved = found.resolved()
    assert (resolved.keep_alive, resolved.idle_timeout, resolved.restart) == (True, 300.0, "on-failure")
    config.set(found)
    assert json.loads(path.read_text()) == doc


def test_a_bad_field_fails_the_command_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"ev": {"command": "node", "idleTimeout": "later",
                                                      "keepAlive": True}}}))
    result = mcp_in("--config", str(path), "tools", "list", "ev")
    assert result.code == 2, result
    assert "idleTimeout must be a duration" in result.stderr
    assert "Traceback" not in result.stderr
