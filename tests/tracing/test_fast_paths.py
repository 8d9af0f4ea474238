"""The fast paths send the trace context the full path sends: the one-shot stdio call and
`@NAME` through the session daemon (its `call` op carries the command's trace). With
OTEL_* variables asking for spans, a call takes the full path, which records them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_server, mcp_in
from sessions.test_fast_path import main_process
from sessions.test_real_daemon import real  # noqa: F401 - the fixture: a private run dir, the real daemon

PARENT = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"

pytestmark = pytest.mark.slow


def requests(record: Path) -> list[dict[str, Any]]:
    return [m for m in map(json.loads, record.read_text().splitlines()) if "id" in m and "method" in m]


def _served_fast(loaded: set[str]) -> bool:
    return not loaded & {"click", "anyio"}


@pytest.mark.parametrize("era", [(), ("--modern",)], ids=["legacy", "modern"])
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_one_shot_path_sends_what_the_full_path_sends(tmp_path: Path, era: tuple[str, ...], how: str) -> None:
    flag = ["--traceparent", PARENT] if how == "flag" else []
    env = {} if how == "flag" else {"TRACEPARENT": PARENT, "TRACESTATE": "congo=t61rcWkgMzE"}
    sent = {}
    for side in ("fast", "full"):
        record = tmp_path / f"{side}.jsonl"
        side_env = {**env, "XDG_CACHE_HOME": str(tmp_path / side)}
        if side == "full":
            side_env["MCPCLI_NO_FAST_PATH"] = "1"
        result, loaded = main_process("tools", "call", "echo", "--arg", "message=hi", *flag,
                                      "--", *fake_server(*era, "--record", str(record)), env=side_env)
        assert result.code == 0, result
        assert _served_fast(loaded) == (side == "fast"), loaded
        sent[side] = requests(record)
    assert sent["fast"] == sent["full"]  # the same requests, `_meta` and all
    assert {m["method"] for m in sent["fast"]} >= {"tools/list", "tools/call"}
    for message in sent["fast"]:
        if message["method"] == "initialize":
            assert "_meta" not in message["params"]
            continue
        assert message["params"]["_meta"]["traceparent"] == PARENT
        assert message["params"]["_meta"].get("tracestate") == (None if how == "flag" else "congo=t61rcWkgMzE")


@pytest.mark.parametrize(("env", "why"), [
    ({"TRACEPARENT": "garbage"}, "the full path warns of it"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, "the full path records spans"),
    ({"OTEL_TRACES_EXPORTER": "console"}, "the full path records spans"),
])
def test_what_the_one_shot_path_leaves_to_the_full_path(tmp_path: Path, env: dict[str, str], why: str) -> None:
    result, loaded = main_process("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server(),
                                  env={**env, "OTEL_BSP_SCHEDULE_DELAY": "1"})
    assert not _served_fast(loaded), why
    assert result.code == 0, result


def test_spans_turned_off_leave_the_fast_path_alone(tmp_path: Path) -> None:
    result, loaded = main_process("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server(),
                                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"})
    assert _served_fast(loaded) and result.code == 0, result
    assert "opentelemetry" not in result.stderr


def test_a_bad_traceparent_flag_is_left_to_the_full_paths_usage_error() -> None:
    result, loaded = main_process("tools", "call", "echo", "--traceparent", "nope", "--", *fake_server())
    assert not _served_fast(loaded)
    assert result.code == 2 and "--traceparent 'nope': not a W3C traceparent" in result.stderr


def test_a_session_call_carries_the_commands_trace_on_both_paths(real: Path, tmp_path: Path) -> None:  # noqa: F811
    record = tmp_path / "sent.jsonl"
    opened = mcp_in("session", "open", "tr", "--", *fake_server("--record", str(record)))
    assert opened.code == 0, opened
    args = ["tools", "call", "@tr", "echo", "--arg", "message=hi"]
    for how in ("flag", "environment"):
        flag = ["--traceparent", PARENT] if how == "flag" else []
        env = {} if how == "flag" else {"TRACEPARENT": PARENT, "TRACESTATE": "a=1"}
        fast, loaded = main_process(*args, *flag, env=env)
        assert _served_fast(loaded), loaded
        normal = mcp_in(*args, *flag, env=env)
        assert (fast.code, fast.stdout, fast.stderr) == (normal.code, normal.stdout, normal.stderr)
        calls = [m for m in requests(record) if m["method"] == "tools/call"][-2:]
        for call in calls:  # the daemon's own tools/call, and the command's relayed
            assert call["params"]["_meta"]["traceparent"] == PARENT, call
            assert call["params"]["_meta"].get("tracestate") == (None if how == "flag" else "a=1")
    fast, loaded = main_process(*args)  # a call without a trace carries none
    assert _served_fast(loaded) and fast.code == 0
    last = [m for m in requests(record) if m["method"] == "tools/call"][-1]
    assert "traceparent" not in last["params"].get("_meta", {})
