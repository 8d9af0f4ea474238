"""`--record` on `@NAME`: the @NAME fast path hands the command to the full CLI, which records
the exchange as the session relays it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sessions.test_fast_path import ev, main_process  # noqa: F401 - the fixture: session `ev`
from sessions.test_real_daemon import real  # noqa: F401 - the fixture: a private run dir, the real daemon

pytestmark = [pytest.mark.peer, pytest.mark.slow]


def test_a_session_call_with_record_takes_the_full_path_and_is_recorded(ev: Path, tmp_path: Path) -> None:  # noqa: F811
    rec = tmp_path / "session.ndjson"
    result, loaded = main_process("tools", "call", "@ev", "echo", "-a", "message=hi", "--record", str(rec))
    assert result.code == 0, result
    assert json.loads(result.stdout)["content"] == [{"type": "text", "text": "Echo: hi"}]
    assert "click" in loaded  # not the fast path, which never loads click
    lines = [json.loads(text) for text in rec.read_text().splitlines()]
    assert lines[0]["msg"]["target"] == "@ev (session)"
    calls = [line for line in lines if line["msg"].get("method") == "tools/call"]
    assert [line["dir"] for line in calls] == ["send"]
    answer = [line for line in lines if line["dir"] == "recv" and line["msg"].get("id") == calls[0]["msg"]["id"]]
    assert answer[0]["msg"]["result"]["content"] == [{"type": "text", "text": "Echo: hi"}]
