"""Plain calls passed through whole (`mcpcli.gateway.passing`) answer as the usual path does.

Each test lists the tools first: only a tool the gateway knows is passed through. The
parity tests run the same calls twice, passed through and the usual way (the backend's
`pass_call` declining everything), and compare what the client saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import Gateway, answer_elicit, demo
from helpers import fake_server, wait_until_async

from mcpcli.client import ClientFeatures
from mcpcli.errors import RPCError
from mcpcli.gateway import GatewayBackend
from mcpcli.toolsfile.model import Upstream

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: The newest era (stateless requests) and the newest legacy session.
ERAS = [None, "2025-11-25"]

JSON = dict[str, Any]


class Way:
    """Whether the gateway may pass calls through, and which calls it took."""

    def __init__(self) -> None:
        self.passing = True
        self.taken: list[str] = []


@pytest.fixture
def way(monkeypatch: pytest.MonkeyPatch) -> Way:
    chosen = Way()
    original = GatewayBackend.pass_call

    def pass_call(self: GatewayBackend, name: str, *args: Any) -> Any:
        if not chosen.passing:
            return None
        passed = original(self, name, *args)
        if passed is not None:
            chosen.taken.append(name)
        return passed

    monkeypatch.setattr(GatewayBackend, "pass_call", pass_call)
    return chosen


def texts(result: JSON) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def error_text(result: JSON) -> str:
    """The one text of a tool error result."""
    assert result["isError"] is True, result
    [said] = texts(result)
    return said


async def _outcome(client: Any, name: str, arguments: JSON | None = None) -> Any:
    progress: list[JSON] = []
    try:
        result = await client.call_tool(name, arguments, on_progress=progress.append)
    except RPCError as exc:
        return ("error", exc.code, exc.rpc_message, exc.data)
    result = dict(result)
    result.pop("_meta", None)
    return ("result", result, [(p.get("progress"), p.get("total"), p.get("message")) for p in progress])


CALLS: list[tuple[str, JSON | None]] = [
    ("echo", {"text": "hi"}),
    ("echo", None),
    ("fail", None),
    ("crash", None),
    ("refuse", {"n": 1}),
    ("progress", None),
    ("log", None),
    ("elicit", None),
    ("two_questions", None),
    ("twice", None),
    ("sample", None),
    ("roots", None),
    ("needs_sampling", None),
]


async def _transcript(gateway: Gateway, protocol: str | None, *, without_sampling: bool = False,
                      upstream: str | bool | None = False) -> list[Any]:
    notes: list[tuple[str, JSON]] = []
    extra: JSON = {}
    if without_sampling:
        extra["features"] = ClientFeatures(elicit=answer_elicit, roots=[{"uri": "file:///tmp/r1", "name": "r1"}])
    upstream_protocol = protocol if upstream is False else upstream
    async with gateway([demo()], protocol=protocol, upstream_protocol=upstream_protocol, notes=notes,
                       log_level="debug", **extra) as client:
        await client.list_tools()
        seen: list[Any] = []
        for name, arguments in CALLS:
            notes.clear()
            outcome = await _outcome(client, name, arguments)
            logged = [params.get("data") for method, params in notes if method == "notifications/message"]
            seen.append((name, outcome, logged))
    return seen


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_passed_call_answers_as_the_usual_path_does(gateway: Gateway, way: Way, protocol: str | None) -> None:
    way.passing = False
    usual = await _transcript(gateway, protocol)
    assert way.taken == []
    way.passing = True
    passed = await _transcript(gateway, protocol)
    # The plain calls went through whole; those asking for input too (the answer to a
    # 2026-07-28 input round resumes the usual path from there).
    assert {"echo", "fail", "crash", "refuse", "progress", "log", "elicit"} <= set(way.taken)
    assert passed == usual
    by_name: dict[str, Any] = {}
    for name, outcome, _logged in passed:
        by_name.setdefault(name, outcome)
    assert texts(by_name["echo"][1]) == ["hi"]
    assert by_name["refuse"][:3] == ("error", -32000, "refused here")
    assert by_name["refuse"][3] == {"why": "a test", "echo": {"n": 1}}
    assert by_name["progress"][2] == [(0, 100, "step 0"), (50, 100, "step 50"), (100, 100, "step 100")]
    assert texts(by_name["elicit"][1]) == ["Hello, Ada!"]
    assert texts(by_name["two_questions"][1]) == ["Ada Ada"]
    assert by_name["log"][0] == "result" and [logged for name, _o, logged in passed if name == "log"] == [
        [{"msg": "debug"}, {"msg": "info"}, {"msg": "warning"}, {"msg": "error"}]]


async def test_a_legacy_client_in_front_of_a_2026_upstream_gets_the_same_answers_either_way(
    gateway: Gateway, way: Way
) -> None:
    """The upstream's input rounds become questions asked of the legacy client, the call
    resumed the usual way from the upstream's first answer."""
    way.passing = False
    usual = await _transcript(gateway, "2025-11-25", upstream=None)
    way.passing = True
    passed = await _transcript(gateway, "2025-11-25", upstream=None)
    assert {"echo", "refuse", "progress", "log", "elicit", "two_questions", "sample"} <= set(way.taken)
    assert passed == usual


@pytest.mark.parametrize("without_sampling", [False, True])
async def test_a_2026_client_in_front_of_a_legacy_upstream_gets_the_same_answers_either_way(
    gateway: Gateway, way: Way, without_sampling: bool
) -> None:
    """A legacy upstream asks its questions as requests during the call; a 2026-07-28
    client answers in input rounds, so a call asked a question moves to the usual path
    (a parked call) at that moment, the upstream's request still in flight."""
    way.passing = False
    usual = await _transcript(gateway, None, upstream="2025-11-25", without_sampling=without_sampling)
    way.passing = True
    passed = await _transcript(gateway, None, upstream="2025-11-25", without_sampling=without_sampling)
    assert {"echo", "refuse", "progress", "log", "elicit", "two_questions", "sample", "roots"} <= set(way.taken)
    assert passed == usual


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_client_that_cannot_answer_gets_the_same_error_either_way(
    gateway: Gateway, way: Way, protocol: str | None
) -> None:
    way.passing = False
    usual = await _transcript(gateway, protocol, without_sampling=True)
    way.passing = True
    passed = await _transcript(gateway, protocol, without_sampling=True)
    assert "sample" in way.taken
    assert passed == usual
    [sampled] = [outcome for name, outcome, _logged in passed if name == "sample"]
    assert sampled[0] == "error" and sampled[1] == (-32021 if protocol is None else -32601)


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_passed_call_that_times_out_is_a_tool_error_and_cancelled_upstream(
    gateway: Gateway, way: Way, tmp_path: Path, protocol: str | None
) -> None:
    log = tmp_path / "slow.log"
    # The upstream's timeout also bounds its start and handshake: 2 s, so it is the call
    # that times out.
    async with gateway([demo("sluggish", timeout=2, env={"GATEWAY_TEST_LOG": str(log)})],
                       protocol=protocol, upstream_protocol=protocol) as client:
        await client.list_tools()
        said = error_text(await client.call_tool("slow"))
        assert way.taken == ["slow"]
        assert said.startswith("upstream sluggish: tools/call timed out after ")
        await wait_until_async(lambda: "cancelled" in log.read_text().split(), 10, "the upstream call to be cancelled")
        assert texts(await client.call_tool("echo", {"text": "still here"})) == ["still here"]


@pytest.mark.parametrize("protocol", ERAS)
async def test_cancelling_a_passed_call_cancels_it_upstream_and_gives_back_its_slot(
    gateway: Gateway, way: Way, tmp_path: Path, protocol: str | None
) -> None:
    log = tmp_path / "slow.log"

    def logged(word: str) -> bool:
        return log.exists() and word in log.read_text().split()

    upstream = demo("one", concurrency=1, env={"GATEWAY_TEST_LOG": str(log)})
    async with gateway([upstream], protocol=protocol, upstream_protocol=protocol) as client:
        await client.list_tools()
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow")
            await wait_until_async(lambda: logged("started"), 10, "the upstream call to start")
            tg.cancel_scope.cancel()
        await wait_until_async(lambda: logged("cancelled"), 10, "the upstream call to be cancelled")
        with anyio.fail_after(10):  # the one slot is free again
            assert texts(await client.call_tool("echo", {"text": "after"})) == ["after"]
        assert way.taken == ["slow", "echo"]


@pytest.mark.parametrize("protocol", ERAS)
async def test_an_upstream_that_dies_during_a_passed_call_is_a_tool_error_naming_it(
    gateway: Gateway, way: Way, protocol: str | None
) -> None:
    async with gateway([demo("flaky")], protocol=protocol, upstream_protocol=protocol) as client:
        await client.list_tools()
        said = error_text(await client.call_tool("die"))
        assert way.taken == ["die"]
        assert said.startswith("upstream flaky failed during the call: ")


async def test_calls_in_flight_at_once_are_each_answered_as_their_own(gateway: Gateway, way: Way) -> None:
    async with gateway([demo(concurrency=4)]) as client:
        await client.list_tools()
        answers: dict[int, list[str]] = {}

        async def one(i: int) -> None:
            answers[i] = texts(await client.call_tool("echo", {"text": str(i)}))

        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(one, i)
        assert answers == {i: [str(i)] for i in range(40)}
        # Past the upstream's 4 slots a call waits its turn the usual way.
        assert 4 <= len(way.taken) <= 40


async def test_an_upstream_behind_on_roots_holds_up_only_a_client_that_has_some(
    gateway: Gateway, way: Way, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upstream asked for roots before any call (the gateway told it none): a client
    without roots has none to bring, and its calls pass through; a client with roots first
    brings them up the usual way (`mcpcli.gateway.asking`)."""
    import mcpcli.client.client

    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", command=tuple(fake_server("--ask-roots", "--record", str(record))))
    rootless = ClientFeatures(elicit=answer_elicit)
    legacy = "2025-11-25"  # a legacy upstream asks for roots when it starts
    async with gateway([upstream], protocol=legacy, upstream_protocol=legacy, features=rootless) as client:
        monkeypatch.setattr(mcpcli.client.client, "ROOTS_WAIT", 10.0)  # the gateway's client waits for the ask
        await client.list_tools()
        await wait_until_async(lambda: record.exists() and "roots-1" in record.read_text(), 10, "the roots answer")
        assert backend_behind(client)  # told none: it is behind, but this client has none to give
        assert texts(await client.call_tool("echo", {"message": "in"})) == ["in"]
    assert way.taken == ["echo"]
    way.taken.clear()
    record.unlink()
    async with gateway([upstream], protocol=legacy, upstream_protocol=legacy) as client:
        await client.list_tools()
        await wait_until_async(lambda: record.exists() and "roots-1" in record.read_text(), 10, "the roots answer")
        assert texts(await client.call_tool("echo", {"message": "in"})) == ["in"]
        assert way.taken == ["echo"]  # its roots were asked of it directly: nothing to catch up
        client.options.features.roots = [{"uri": "file:///tmp/r2", "name": "r2"}]
        await client.peer.notify("notifications/roots/list_changed")
        await wait_until_async(lambda: backend_behind(client), 10, "the gateway to hear of the change")
        assert texts(await client.call_tool("echo", {"message": "two"})) == ["two"]
        assert way.taken == ["echo"]  # this one brought the new roots up first, the usual way
        assert texts(await client.call_tool("echo", {"message": "three"})) == ["three"]
    assert way.taken == ["echo", "echo"]  # caught up: the next passes through again


def backend_behind(client: Any) -> bool:
    return any(link.asking.behind for link in client.backend.links)


async def test_a_moved_call_whose_client_never_answers_ends_and_gives_back_its_slot(way: Way) -> None:
    """A 2026-07-28 client asked a legacy upstream's question never answers: the parked call
    expires (`input_ttl`), the upstream is told, and the upstream's one slot is free again."""
    from mcpcli.client import Client, ClientOptions
    from mcpcli.gateway import GatewayOptions
    from mcpcli.server import Server

    asked = anyio.Event()

    async def never(params: JSON) -> JSON:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    options = GatewayOptions(protocol="2025-11-25", log=lambda line: None, warn=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([demo("one", concurrency=1)], options=options) as backend:
            server = Server(backend, input_ttl=0.5)
            async with Client(server.transport(), ClientOptions(features=ClientFeatures(elicit=never))) as client:
                await client.list_tools()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "elicit")
                    await asked.wait()
                    # Past the input_ttl the parked call ends, and with it the upstream request.
                    assert texts(await client.call_tool("echo", {"text": "after"})) == ["after"]
                    tg.cancel_scope.cancel()
    assert way.taken[0] == "elicit"
