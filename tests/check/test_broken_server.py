"""`mcp check` against a server of our own with every defect it names (tests/check/broken_server.py).

Each scenario's findings are asserted by code; together the scenarios name every code in
the registry, and the clean scenario names none. The server is a real stdio process,
`mcp` runs in process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import Result, mcp_in

from mcpcli.check import CODES

pytestmark = pytest.mark.slow

SERVER = Path(__file__).resolve().parent / "broken_server.py"

#: What each scenario must find: code -> severity.
EXPECTED: dict[str, dict[str, str]] = {
    "broken": {
        "handshake-shape": "error", "ping": "error", "pagination": "error", "list-failed": "error",
        "capability": "error", "unknown-method": "error", "unknown-tool": "warning", "result-shape": "error",
        "notification-order": "warning", "progress": "error", "tool-name": "warning", "duplicate-name": "error",
        "missing-description": "warning", "input-schema": "error", "schema-invalid": "error",
        "schema-required": "error", "schema-ref": "error", "schema-remote-ref": "warning",
        "output-schema": "error", "call-failed": "warning", "structured-content": "error",
        "provider-tool-name": "warning", "provider-property-name": "warning", "provider-schema-root": "warning",
        "provider-keyword": "info", "provider-strict": "info",
    },
    "modern": {
        "handshake-shape": "warning", "result-shape": "warning", "pagination": "error", "tool-header": "error",
        "notification-forbidden": "error", "version": "error",
    },
    "modern-noinit": {"connect": "error"},
    "hang": {"timeout": "error"},
    "crash": {"connection-lost": "error"},
    "many": {"provider-tool-count": "warning"},
}
#: Scenarios that need a short --timeout (a tool never answers).
TIMEOUT = {"hang": "5"}


def check(scenario: str, *flags: str) -> Result:
    timeout = ("--timeout", TIMEOUT[scenario]) if scenario in TIMEOUT else ()
    return mcp_in("check", "--json", *timeout, *flags, "--", sys.executable, str(SERVER), scenario)


def findings(result: Result) -> list[dict[str, Any]]:
    data = json.loads(result.stdout)
    return list(data["findings"])


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_each_defect_is_found_with_its_code(scenario: str) -> None:
    r = check(scenario)
    assert r.code == (0 if scenario == "many" else 1), r  # `many` has only a warning
    found = findings(r)
    codes = {f["code"] for f in found}
    for code, severity in EXPECTED[scenario].items():
        assert code in codes, (code, r)
        assert severity in {f["severity"] for f in found if f["code"] == code}, (code, severity, r)
    assert all(f["code"] in CODES for f in found)


def test_the_scenarios_name_every_code() -> None:
    expected = set().union(*(set(codes) for codes in EXPECTED.values()))
    assert expected == set(CODES)


def test_a_clean_server_yields_no_finding() -> None:
    r = check("clean")
    assert r.code == 0, r
    data = json.loads(r.stdout)
    assert data["findings"] == []
    assert data["ok"] is True
    assert data["server"]["checked"] == ["legacy 2025-11-25"]
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    # the read-only tool was called and its structured content matched its output schema
    assert statuses["call:answer"] == "passed"
    assert statuses["legacy:ping"] == "passed"
    assert statuses["legacy:tools"] == "passed"


def test_no_calls_calls_nothing() -> None:
    r = check("broken", "--no-calls")
    codes = {f["code"] for f in findings(r)}
    assert "structured-content" not in codes and "call-failed" not in codes
    assert not any(c["id"].startswith("call:") for c in json.loads(r.stdout)["checks"])


def test_warnings_pass_unless_strict() -> None:
    # `many`: one warning (130 tools), no error
    r = check("many")
    assert r.code == 0, r
    assert {f["severity"] for f in findings(r)} == {"warning"}
    strict = check("many", "--strict")
    assert strict.code == 1, strict
    assert json.loads(strict.stdout)["ok"] is False


def test_a_lost_connection_still_lints_what_was_listed() -> None:
    r = check("crash")
    data = json.loads(r.stdout)
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    assert statuses["lint:tools"] == "passed"
    assert "providers" in statuses
