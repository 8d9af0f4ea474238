"""Roots an upstream asks the gateway for: within a call, outside any call, and after the
client's roots changed (issue 12: get-roots-list of server-everything hung behind a stdio
gateway). The upstream is the scriptable fake stdio server; every wait is bounded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import Gateway
from helpers import fake_server, wait_until_async

from mcpcli.toolsfile.model import Upstream

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: Our client's default (2026-07-28: input in rounds) and a legacy session.
ERAS = [None, "2025-11-25"]
R1 = [{"uri": "file:///tmp/r1", "name": "r1"}]
R2 = [{"uri": "file:///tmp/r2", "name": "r2"}]


@pytest.fixture
def roots_wait(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Call it once our client is connected: from then on the gateway's own client waits for
    an upstream's roots/list after the handshake, as a CLI command does (the fake server with
    --ask-roots refuses calls until its roots are in). Only for upstreams that ask: one that
    does not (or the gateway itself, to our client) would cost the whole wait."""
    import mcpcli.client.client

    return lambda: monkeypatch.setattr(mcpcli.client.client, "ROOTS_WAIT", 10.0)


def texts(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def answers(record: Path) -> list[Any]:
    """The roots in the gateway's answers to the fake server's roots/list, in order."""
    lines = record.read_text().splitlines() if record.exists() else []
    return [m["result"]["roots"] for m in map(json.loads, lines)
            if str(m.get("id")).startswith("roots-") and "result" in m]


def answered_ids(record: Path) -> list[Any]:
    """The ids of the gateway's answers the fake server received."""
    lines = record.read_text().splitlines() if record.exists() else []
    return [m.get("id") for m in map(json.loads, lines) if "method" not in m]


def answered(record: Path, rid: str) -> list[Any]:
    """The roots in the gateway's answers to the fake server's roots/list `rid`."""
    lines = record.read_text().splitlines() if record.exists() else []
    return [m["result"]["roots"] for m in map(json.loads, lines) if m.get("id") == rid and "result" in m]


@pytest.mark.parametrize("protocol", ERAS)
async def test_two_roots_requests_within_one_call_are_both_answered(gateway: Gateway, protocol: str | None) -> None:
    """server-everything's get-roots-list while its own startup roots/list is still open: two
    roots/list at once during one call. A 2026-07-28 call's input round holds one set of
    questions: the second ask used to replace the first, which then waited forever."""
    upstream = Upstream(name="fs", command=tuple(fake_server("--roots-tool", "2")))
    async with gateway([upstream], protocol=protocol) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("roots")
    assert json.loads(texts(result)[0]) == [R1, R1]


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_question_the_upstream_sends_as_the_call_ends_is_answered(
    gateway: Gateway, tmp_path: Path, protocol: str | None
) -> None:
    """The upstream asks for roots and answers the call in the same breath (nothing ties
    the question to the call on stdio): the question is still answered by that call's
    client (the call waits for it before it ends; a 2026-07-28 question must be answered
    while the call's backend still runs), and the call's result still arrives."""
    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", command=tuple(fake_server("--roots-tool", "1", "--record", str(record))))
    async with gateway([upstream], protocol=protocol) as client:
        assert texts(await client.call_tool("roots-and-go")) == ["gone"]
        await wait_until_async(lambda: any(str(k).startswith("rl-") for k in answered_ids(record)), 10,
                               "the answer to the roots/list")
    assert [m["result"]["roots"] for m in map(json.loads, record.read_text().splitlines())
            if str(m.get("id")).startswith("rl-") and "result" in m] == [R1]


@pytest.mark.parametrize("protocol", ERAS)
async def test_roots_asked_outside_any_call_are_answered_at_once(
    gateway: Gateway, tmp_path: Path, roots_wait: Callable[[], None], protocol: str | None
) -> None:
    """Connected for a listing (no client call behind it), a legacy server's roots/list is
    answered at once (it used to wait up to 30 s for a call that may never come). A legacy
    client is asked directly. A 2026-07-28 client can be asked only within a call: the
    gateway knows no roots yet, so none; the next call brings the client's roots up (the
    gateway asks the client within that call and tells the server they changed)."""
    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", command=tuple(fake_server("--ask-roots", "--record", str(record))))
    async with gateway([upstream], protocol=protocol) as client:
        roots_wait()
        assert "echo" in {t["name"] for t in (await client.list_tools())["tools"]}
        await wait_until_async(lambda: answered(record, "roots-1"), 10, "the answer to the startup roots/list")
        legacy = protocol is not None
        assert answered(record, "roots-1") == [R1 if legacy else []]
        assert texts(await client.call_tool("echo", {"message": "in"})) == ["in"]
        if not legacy:
            await wait_until_async(lambda: answered(record, "roots-2"), 10, "the answer after roots/list_changed")
        # Caught up: the next call does not ask the client or tell the server again.
        assert texts(await client.call_tool("echo", {"message": "again"})) == ["again"]
    assert answers(record) == ([R1] if legacy else [[], R1])
    asked = [json.loads(line).get("method") for line in record.read_text().splitlines()]
    assert asked.count("notifications/roots/list_changed") == (0 if legacy else 1)  # once, not per call


async def test_the_clients_new_roots_reach_the_upstream_with_its_next_call(
    gateway: Gateway, tmp_path: Path, roots_wait: Callable[[], None]
) -> None:
    """A legacy client says its roots changed: the upstream was told the old ones, so the
    next call gets the new ones from the client and tells the upstream (it asks again)."""
    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", command=tuple(fake_server("--ask-roots", "--record", str(record))))
    async with gateway([upstream], protocol="2025-11-25") as client:
        roots_wait()
        assert texts(await client.call_tool("echo", {"message": "one"})) == ["one"]
        await wait_until_async(lambda: answers(record)[-1:] == [R1], 10, "the client's roots upstream")
        told = len(answers(record))
        client.options.features.roots = R2
        await client.peer.notify("notifications/roots/list_changed")
        assert texts(await client.call_tool("echo", {"message": "two"})) == ["two"]
        await wait_until_async(lambda: len(answers(record)) > told, 10, "the answer after roots/list_changed")
    assert answers(record)[told:] == [R2]


async def test_roots_the_client_gave_answer_a_question_outside_any_call(
    gateway: Gateway, tmp_path: Path, roots_wait: Callable[[], None]
) -> None:
    """Behind a gateway with one client (stdio; in-process here), the roots that client (a
    2026-07-28 one: it can be asked only within a call) gave through one upstream answer
    another upstream's roots/list that no call caused (a restarted server's question)."""
    first = Upstream(name="a", prefix="a_", command=tuple(fake_server("--roots-tool", "1", "--ask-roots")))
    record = tmp_path / "record.jsonl"
    second = Upstream(name="b", prefix="b_",
                      command=tuple(fake_server("--ask-roots", "--crash-on-call", "3", "--record", str(record))))
    async with gateway([first, second]) as client:
        roots_wait()
        await client.list_tools()  # both connect; b's question comes before the gateway knows any roots
        await wait_until_async(lambda: answered(record, "roots-1"), 10, "b's first roots answer")
        assert json.loads(texts(await client.call_tool("a_roots"))[0]) == [R1]
        crashed = await client.call_tool("b_echo", {"message": "x"})
        assert crashed.get("isError"), crashed
        await wait_until_async(lambda: len(answered(record, "roots-1")) == 2, 10, "the restarted b's roots answer")
    assert answered(record, "roots-1") == [[], R1]
