"""`mcpcli.core.handshake`: the sans-I/O handshake both clients (full and one-shot) read through."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcpcli.core.handshake import (
    next_round,
    offered_versions,
    parse_discover,
    parse_initialize,
    request_meta,
    round_kind,
    rpc_error_from,
    with_meta,
)
from mcpcli.core.jsonrpc import ErrorObject
from mcpcli.core.protocol import LATEST_MODERN, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY
from mcpcli.errors import ProtocolError, RPCError, ServerShuttingDown, UnsupportedVersionError


def test_discover_picks_our_version_and_reads_info_from_meta_or_top_level() -> None:
    result = {"supportedVersions": ["1999-01-01", LATEST_MODERN, 7], "capabilities": {"tools": {}},
              "_meta": {SERVER_INFO_KEY: {"name": "s"}}, "instructions": "hi"}
    got = parse_discover(result, "2099-01-01")
    assert got is not None
    assert (got.era, got.protocol_version, got.server_info, got.instructions) == ("modern", LATEST_MODERN, {"name": "s"}, "hi")
    assert got.supported_versions == ["1999-01-01", LATEST_MODERN]
    top = parse_discover({"supportedVersions": [LATEST_MODERN], "serverInfo": {"name": "t"}, "capabilities": []},
                         LATEST_MODERN)
    assert top is not None and top.server_info == {"name": "t"} and top.capabilities == {}
    assert parse_discover({"supportedVersions": ["2025-11-25"]}, LATEST_MODERN) is None
    assert parse_discover({}, LATEST_MODERN) is None
    assert offered_versions({}) is None and offered_versions({"supportedVersions": [1, "a"]}) == ["a"]


def test_initialize_refuses_a_version_we_do_not_speak() -> None:
    got = parse_initialize({"protocolVersion": "2025-06-18", "serverInfo": "x", "instructions": 3})
    assert (got.era, got.protocol_version, got.server_info, got.instructions) == ("legacy", "2025-06-18", {}, None)
    with pytest.raises(ProtocolError, match="chose protocol version '2026-07-28'"):
        parse_initialize({"protocolVersion": LATEST_MODERN})


def test_request_meta_and_rounds() -> None:
    meta = request_meta(LATEST_MODERN, {"name": "c"}, {}, "debug")
    assert meta[PROTOCOL_VERSION_KEY] == LATEST_MODERN and meta[LOG_LEVEL_KEY] == "debug"
    assert LOG_LEVEL_KEY not in request_meta(LATEST_MODERN, {}, {})
    sent = with_meta({"a": 1, "_meta": {"progressToken": 3, PROTOCOL_VERSION_KEY: "old"}}, meta)
    assert sent["_meta"]["progressToken"] == 3 and sent["_meta"][PROTOCOL_VERSION_KEY] == LATEST_MODERN
    assert round_kind("m", {}, creates_tasks=False, takes_input=False) == "complete"
    assert round_kind("m", {"resultType": "task"}, creates_tasks=True, takes_input=False) == "task"
    assert round_kind("m", {"resultType": "input_required"}, creates_tasks=False, takes_input=True) == "input"
    with pytest.raises(ProtocolError, match="unknown resultType 'task'"):
        round_kind("m", {"resultType": "task"}, creates_tasks=False, takes_input=True)
    with pytest.raises(ProtocolError, match="which this method cannot"):
        round_kind("m", {"resultType": "input_required"}, creates_tasks=True, takes_input=False)
    assert next_round({"a": 1}, {"requestState": "s"}, {"k": {}}) == {"a": 1, "inputResponses": {"k": {}}, "requestState": "s"}


def test_rpc_errors_are_typed() -> None:
    plain = rpc_error_from(ErrorObject(-32602, "bad"))
    assert type(plain) is RPCError and plain.code == -32602
    assert isinstance(rpc_error_from(ErrorObject(-32022, "v", {"supported": [LATEST_MODERN]})), UnsupportedVersionError)
    assert isinstance(rpc_error_from(ErrorObject(-32000, "bye", {"reason": "shutdown"})), ServerShuttingDown)
    assert type(rpc_error_from(ErrorObject(-32000, "other"))) is RPCError


def test_importing_it_loads_neither_anyio_nor_click() -> None:
    code = "import sys, mcpcli.core.handshake; print(sorted(m for m in ('anyio', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
