"""`--meta KEY=VALUE`: extra `_meta` entries on every request a command sends, never
overriding the keys the client sets itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in


def _sent(record: Path, method: str) -> list[dict]:
    messages = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    return [m for m in messages if m.get("method") == method]


@pytest.mark.parametrize("era", [(), ("--modern",)], ids=["legacy", "modern"])
def test_meta_reaches_every_request_typed_as_json_or_text(tmp_path: Path, era: tuple[str, ...]) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi",
               "--meta", "trace=abc-1", "--meta", "n=3", "--meta", 'o={"a":[1]}', "--meta", "on=true",
               "--", *fake_server(*era, "--record", str(record)))
    assert r.code == 0, r
    assert r.json["content"] == [{"type": "text", "text": "hi"}]
    for method in ("tools/list", "tools/call"):
        (request,) = _sent(record, method)
        meta = request["params"]["_meta"]
        assert {k: meta[k] for k in ("trace", "n", "o", "on")} == {
            "trace": "abc-1", "n": 3, "o": {"a": [1]}, "on": True}
    (call,) = _sent(record, "tools/call")
    assert "progressToken" in call["params"]["_meta"]  # the client's own key is still there


@pytest.mark.parametrize("key", ["progressToken", "io.modelcontextprotocol/protocolVersion",
                                 "dev.mcp/anything"])
def test_a_key_the_client_sets_is_a_usage_error(tmp_path: Path, key: str) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("tools", "list", "--meta", f"{key}=x", "--", *fake_server("--record", str(record)))
    assert r.code == 2, r
    assert r.stdout == ""
    assert f"--meta {key!r}: the client sets this _meta key itself" in r.stderr
    assert "Traceback" not in r.stderr


def test_meta_without_a_value_is_a_usage_error() -> None:
    r = mcp_in("ping", "--meta", "novalue", "--", *fake_server())
    assert r.code == 2, r
    assert "--meta 'novalue': expected KEY=VALUE" in r.stderr


@pytest.mark.parametrize("era", [(), ("--modern",)], ids=["legacy", "modern"])
def test_meta_reaches_ping(tmp_path: Path, era: tuple[str, ...]) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("ping", "--meta", "trace=p1", "--", *fake_server(*era, "--record", str(record)))
    assert r.code == 0, r
    method = "server/discover" if era else "ping"
    assert _sent(record, method)[-1]["params"]["_meta"]["trace"] == "p1"


def test_non_finite_numbers_are_sent_as_text_not_an_internal_error(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    r = mcp_in("ping", "--meta", "a=NaN", "--meta", "b=1e999", "--meta", "c=-Infinity",
               "--meta", 'd={"x":NaN}', "--", *fake_server("--record", str(record)))
    assert r.code == 0, r
    assert "internal error" not in r.stderr
    meta = _sent(record, "ping")[-1]["params"]["_meta"]
    assert {k: meta[k] for k in "abcd"} == {"a": "NaN", "b": "1e999", "c": "-Infinity", "d": '{"x":NaN}'}
