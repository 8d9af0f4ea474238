"""The client's side: `--traceparent` or `TRACEPARENT` puts the trace context into every
request's `_meta`, in every era (the `server/discover` probe too; a legacy `initialize`
not); without either, nothing is added."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_server, mcp_in

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
OTHER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
ERAS = [((), "legacy"), (("--modern",), "modern")]


def received(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def requests(record: Path) -> list[dict[str, Any]]:
    return [m for m in received(record) if "id" in m and "method" in m]


#: Every revision: the negotiated legacy and modern ones, and each legacy one forced.
REVISIONS = [((), "legacy", None), (("--modern",), "modern", None)] + [
    ((), "legacy", version) for version in ("2024-11-05", "2025-03-26", "2025-06-18")]


@pytest.mark.parametrize(("server_flags", "era", "protocol"), REVISIONS,
                         ids=["legacy", "modern", "2024-11-05", "2025-03-26", "2025-06-18"])
def test_the_flag_reaches_every_request_in_every_era(tmp_path: Path, server_flags: tuple[str, ...], era: str,
                                                     protocol: str | None) -> None:
    record = tmp_path / "sent.jsonl"
    forced = ("--protocol", protocol) if protocol else ()
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--traceparent", PARENT, *forced,
               "--", *fake_server(*server_flags, "--record", str(record)))
    assert r.code == 0, r
    sent = requests(record)
    methods = [m["method"] for m in sent]
    assert "tools/call" in methods and "tools/list" in methods
    assert ("initialize" in methods) == (era == "legacy")
    for message in sent:  # the probe too (server/discover)
        if message["method"] == "initialize":
            # None on a legacy initialize: dual-era HTTP servers take any `_meta` there for 2026-07-28.
            assert "_meta" not in message["params"], message
            continue
        meta = message["params"]["_meta"]
        assert meta["traceparent"] == PARENT, message
        assert "tracestate" not in meta  # the flag carries no tracestate
    for note in (m for m in received(record) if "id" not in m):
        assert "traceparent" not in json.dumps(note)  # notifications carry none


@pytest.mark.parametrize(("server_flags", "era"), ERAS, ids=[e for _, e in ERAS])
def test_the_environment_with_its_tracestate(tmp_path: Path, server_flags: tuple[str, ...], era: str) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "list", "--", *fake_server(*server_flags, "--record", str(record)),
               env={"TRACEPARENT": PARENT, "TRACESTATE": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"})
    assert r.code == 0, r
    for message in requests(record):
        if message["method"] != "initialize":
            meta = message["params"]["_meta"]
            assert (meta["traceparent"], meta["tracestate"]) == (PARENT, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")


def test_the_flag_wins_over_the_environment_and_leaves_its_tracestate(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("ping", "--traceparent", OTHER, "--", *fake_server("--record", str(record)),
               env={"TRACEPARENT": PARENT, "TRACESTATE": "a=1"})
    assert r.code == 0, r
    (ping,) = [m for m in requests(record) if m["method"] == "ping"]
    assert ping["params"]["_meta"] == {"traceparent": OTHER}


@pytest.mark.parametrize(("server_flags", "era"), ERAS, ids=[e for _, e in ERAS])
def test_without_a_trace_nothing_is_added(tmp_path: Path, server_flags: tuple[str, ...], era: str) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--",
               *fake_server(*server_flags, "--record", str(record)))
    assert r.code == 0, r
    for message in received(record):
        assert "trace" not in json.dumps(message)
    if era == "legacy":
        (initialize,) = [m for m in requests(record) if m["method"] == "initialize"]
        assert "_meta" not in initialize["params"]  # the bytes of before


@pytest.mark.parametrize("value", ["", "garbage", PARENT.upper(), f"00-{'0' * 32}-00f067aa0ba902b7-01"])
def test_a_bad_flag_is_a_usage_error_and_nothing_is_sent(tmp_path: Path, value: str) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "list", "--traceparent", value, "--", *fake_server("--record", str(record)))
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == (
        f"mcp: error: --traceparent {value!r}: not a W3C traceparent "
        "(00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>)")
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not record.exists() or not requests(record)


def test_a_bad_variable_is_a_warning_and_the_call_goes_on(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--",
               *fake_server("--record", str(record)), env={"TRACEPARENT": "not-a-trace", "TRACESTATE": "a=1"})
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "hi"}]
    assert r.stderr.count("warning") == 1
    assert ("mcp: warning: TRACEPARENT='not-a-trace' is not a W3C traceparent "
            "(00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>); requests carry no trace context") in r.stderr
    for message in received(record):
        assert "trace" not in json.dumps(message)


@pytest.mark.parametrize("key", ["traceparent", "tracestate"])
def test_meta_cannot_set_the_trace_context(tmp_path: Path, key: str) -> None:
    r = mcp_in("ping", "--meta", f"{key}={PARENT}", "--", *fake_server())
    assert r.code == 2, r
    assert f"--meta {key!r}: the client sets this _meta key itself" in r.stderr
    assert "hint: give the trace with --traceparent VALUE" in r.stderr


def test_trace_shows_it(tmp_path: Path) -> None:
    r = mcp_in("tools", "list", "--trace", "--traceparent", PARENT, "--", *fake_server("--modern"))
    assert r.code == 0, r
    sent = [line for line in r.stderr.splitlines() if line.startswith("→")]
    assert sent and all(f'"traceparent":"{PARENT}"' in line for line in sent if '"id"' in line), sent
