"""GatewayBackend in front of real stdio upstreams (the demo backend), our client in front."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import Gateway, demo
from helpers import wait_until_async

from mcpcli.errors import RPCError
from mcpcli.toolsfile.model import ToolFilter

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = [None, "2025-11-25"]


def texts(result: dict) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


async def test_tools_pass_through_unprefixed(gateway: Gateway) -> None:
    async with gateway([demo()]) as client:
        names = [t["name"] for t in (await client.list_tools())["tools"]]
        assert "echo" in names and "whoami" in names
        assert texts(await client.call_tool("echo", {"text": "hi"})) == ["hi"]
        echo = await client.get_tool("echo")
        assert echo is not None and echo["annotations"] == {"readOnlyHint": True}


async def test_prefix_renames_tools_and_prompts(gateway: Gateway) -> None:
    async with gateway([demo(prefix="d_")]) as client:
        names = [t["name"] for t in (await client.list_tools())["tools"]]
        assert "d_echo" in names and "echo" not in names
        assert texts(await client.call_tool("d_echo", {"text": "x"})) == ["x"]
        with pytest.raises(RPCError) as caught:
            await client.call_tool("echo", {"text": "x"})
        assert caught.value.code == -32602
        prompts = [p["name"] for p in (await client.list_prompts())["prompts"]]
        assert prompts == ["d_greet", "d_ask_context"]
        got = await client.get_prompt("d_greet", {"who": "Ada"})
        assert got["messages"][0]["content"]["text"] == "Hello Ada"
        done = await client.complete({"type": "ref/prompt", "name": "d_greet"}, "who", "al")
        assert done["completion"]["values"] == ["alice", "alfred"]


@pytest.mark.parametrize("name", ["echo", "ECHO", "Echo", "eCHo", " echo", "echo\u0000"])
async def test_a_denied_tool_is_unknown_whatever_the_spelling(gateway: Gateway, name: str) -> None:
    rules = ToolFilter(deny=("ECHO",))
    async with gateway([demo(tools=rules)]) as client:
        names = {t["name"] for t in (await client.list_tools())["tools"]}
        assert not {"echo", "Echo"} & names  # the glob ignores case: both are denied
        with pytest.raises(RPCError) as caught:
            await client.call_tool(name, {"text": "x"})
        assert caught.value.code == -32602
        assert "Unknown tool" in str(caught.value)


async def test_allow_list_and_deny_globs(gateway: Gateway) -> None:
    rules = ToolFilter(allow=("e*", "who*", "delete_*"), deny=("*delete*",))
    async with gateway([demo(tools=rules)]) as client:
        names = sorted(t["name"] for t in (await client.list_tools())["tools"])
        assert names == ["Echo", "echo", "elicit", "whoami"]
        for refused in ("delete_all", "slow", "fail"):
            with pytest.raises(RPCError) as caught:
                await client.call_tool(refused, {})
            assert caught.value.code == -32602


async def test_read_only_serves_only_read_only_annotated_tools(gateway: Gateway) -> None:
    async with gateway([demo(tools=ToolFilter(read_only=True))]) as client:
        names = sorted(t["name"] for t in (await client.list_tools())["tools"])
        assert names == ["echo", "whoami"]
        with pytest.raises(RPCError) as caught:
            await client.call_tool("delete_all", {})
        assert caught.value.code == -32602


async def test_per_upstream_env_and_two_upstreams_with_prefixes(gateway: Gateway) -> None:
    ups = [demo("a", prefix="a_", env={"GATEWAY_TEST_VAR": "one"}),
           demo("b", prefix="b_", env={"GATEWAY_TEST_VAR": "two"})]
    async with gateway(ups) as client:
        a = texts(await client.call_tool("a_whoami"))[0].split()
        b = texts(await client.call_tool("b_whoami"))[0].split()
        assert a[1] == "one" and b[1] == "two" and a[0] != b[0]


@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("upstream_protocol", ERAS)
async def test_client_features_cross_the_gateway_in_every_era_pairing(
    gateway: Gateway, protocol: str | None, upstream_protocol: str | None
) -> None:
    """Elicitation, sampling and roots asked by the upstream are answered by the downstream
    client, whether each side speaks 2025-11-25 (server requests) or 2026-07-28 (MRTR)."""
    notes: list = []
    async with gateway([demo()], protocol=protocol, upstream_protocol=upstream_protocol, notes=notes,
                       log_level="debug") as client:
        assert client.protocol_version == (protocol or "2026-07-28")
        assert texts(await client.call_tool("elicit")) == ["Hello, Ada!"]
        assert texts(await client.call_tool("sample")) == ["sampled: 4"]
        assert texts(await client.call_tool("roots")) == ["roots: file:///tmp/r1"]
        assert texts(await client.call_tool("two_questions")) == ["Ada Ada"]
        progress: list[float] = []
        await client.call_tool("progress", on_progress=lambda p: progress.append(p["progress"]))
        assert progress == [0, 50, 100]
        await client.set_log_level("warning")
        assert texts(await client.call_tool("log")) == ["logged"]
        levels = [p["level"] for m, p in notes if m == "notifications/message"]
        assert levels == ["warning", "error"]


async def test_resources_templates_and_reads(gateway: Gateway) -> None:
    async with gateway([demo()]) as client:
        uris = [r["uri"] for r in (await client.list_resources())["resources"]]
        assert uris == ["mem://greeting", "mem://blob"]
        templates = (await client.list_resource_templates())["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == ["mem://items/{id}"]
        assert (await client.read_resource("mem://greeting"))["contents"][0]["text"] == "hello"
        assert (await client.read_resource("mem://items/42"))["contents"][0]["text"] == "42"
        with pytest.raises(RPCError) as caught:
            await client.read_resource("mem://nothing")
        assert caught.value.code in (-32002, -32602)


async def test_resources_false_hides_them(gateway: Gateway) -> None:
    async with gateway([demo(resources=False, prompts=False)]) as client:
        assert not client.offers("resources") and not client.offers("prompts")


async def test_a_crashed_upstream_answers_is_error_then_comes_back(gateway: Gateway) -> None:
    async with gateway([demo("flaky")]) as client:
        first = texts(await client.call_tool("whoami"))[0].split()[0]
        died = await client.call_tool("die")
        assert died["isError"] is True
        assert "flaky" in texts(died)[0]
        answers: list[dict] = []

        async def restarted() -> bool:
            answers.append(await client.call_tool("whoami"))
            return not answers[-1].get("isError")

        await wait_until_async(restarted, 20, "the upstream to be restarted")
        assert all("flaky" in texts(a)[0] for a in answers[:-1])  # meanwhile: errors naming it
        assert texts(answers[-1])[0].split()[0] != first


async def test_a_busy_upstream_does_not_block_another(gateway: Gateway) -> None:
    async with gateway([demo("slowpoke", prefix="s_", concurrency=1), demo("quick", prefix="q_")]) as client:
        await client.list_tools()
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "s_slow")
            with anyio.fail_after(10):
                assert texts(await client.call_tool("q_echo", {"text": "fast"})) == ["fast"]
            tg.cancel_scope.cancel()


async def test_cancelling_a_call_cancels_it_upstream(gateway: Gateway, tmp_path: Path) -> None:
    log = tmp_path / "slow.log"

    def logged(word: str) -> bool:
        return log.exists() and word in log.read_text().split()

    async with gateway([demo(env={"GATEWAY_TEST_LOG": str(log)})]) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow")
            await wait_until_async(lambda: logged("started"), 10, "the upstream call to start")
            tg.cancel_scope.cancel()
        await wait_until_async(lambda: logged("cancelled"), 10, "the upstream call to be cancelled")
        assert texts(await client.call_tool("echo", {"text": "after"})) == ["after"]


async def test_a_call_waiting_for_the_upstreams_one_slot_gets_it_when_the_holder_is_cancelled(
    gateway: Gateway, tmp_path: Path
) -> None:
    log = tmp_path / "slow.log"

    def logged(word: str) -> bool:
        return log.exists() and word in log.read_text().split()

    upstream = demo("one", prefix="o_", concurrency=1, env={"GATEWAY_TEST_LOG": str(log)})
    async with gateway([upstream]) as client:
        answers: list[dict] = []
        async with anyio.create_task_group() as tg:
            holder = anyio.CancelScope()

            async def hold() -> None:
                with holder:
                    await client.call_tool("o_slow")

            async def wait_then_echo() -> None:
                answers.append(await client.call_tool("o_echo", {"text": "next"}))

            tg.start_soon(hold)
            await wait_until_async(lambda: logged("started"), 10, "the upstream call to start")
            tg.start_soon(wait_then_echo)
            await anyio.wait_all_tasks_blocked()
            assert answers == []  # the one slot is taken
            holder.cancel()
        assert [texts(a) for a in answers] == [["next"]]
        await wait_until_async(lambda: logged("cancelled"), 10, "the upstream call to be cancelled")
        # Each call gave its slot back: one more goes through at once.
        with anyio.fail_after(10):
            assert texts(await client.call_tool("o_echo", {"text": "again"})) == ["again"]


async def test_shutdown_stops_every_upstream(gateway: Gateway) -> None:
    async with gateway([demo("x", prefix="x_"), demo("y", prefix="y_")], eager=True) as client:
        pids = {texts(await client.call_tool(name))[0].split()[0] for name in ("x_whoami", "y_whoami")}
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


@pytest.mark.parametrize("protocol", ERAS)
async def test_an_upstream_list_change_is_announced(gateway: Gateway, protocol: str | None) -> None:
    async with gateway([demo()], protocol=protocol) as client:
        await client.list_tools()
        async with client.subscribe(tools=True) as changes:
            assert texts(await client.call_tool("grow")) == ["1 extra tools"]
            with anyio.fail_after(10):
                change = await changes.receive()
        assert change["method"] == "notifications/tools/list_changed"
        names = {t["name"] for t in (await client.list_tools())["tools"]}
        assert "extra_000" in names


async def test_a_tool_only_the_links_newest_listing_has_is_called_not_unknown(gateway: Gateway) -> None:
    """Right after an upstream's list_changed, its new listing is stored at its link a moment
    before the gateway rebuilds what it serves: a call for a tool only that listing has is
    routed, never "Unknown tool" (a client calling right after the change hit that window)."""
    async with gateway([demo()]) as client:
        link = client.backend.links[0]  # type: ignore[attr-defined]
        await client.list_tools()
        announced: list[str] = []
        # Hold the gateway's own re-list back: the window stays open for the test.
        link._events = lambda link, kind, detail: announced.append(kind)
        assert texts(await client.call_tool("grow")) == ["1 extra tools"]
        await wait_until_async(lambda: "tools" in announced, what="the upstream's list_changed")
        await link.listing("tools")  # what the re-list does first
        assert texts(await client.call_tool("extra_000")) == ["extra_000"]


async def test_a_change_announced_with_nothing_visible_changed_is_passed_on(gateway: Gateway) -> None:
    """An upstream's announcement whose list looks the same (conformance servers do this)."""
    async with gateway([demo()]) as client:
        await client.list_tools()
        async with client.subscribe(tools=True) as changes:
            assert texts(await client.call_tool("change", {"text": "tools"})) == ["changed"]
            with anyio.fail_after(10):
                change = await changes.receive()
        assert change["method"] == "notifications/tools/list_changed"


async def test_tools_that_return_after_a_restart_are_announced(gateway: Gateway) -> None:
    """A restarted upstream lists anew: what changed (here: `grow`'s tool is gone) is announced."""
    async with gateway([demo("flaky")]) as client:
        await client.call_tool("grow")
        async def grown() -> bool:
            return "extra_000" in {t["name"] for t in (await client.list_tools())["tools"]}

        await wait_until_async(grown, 10, "the grown tool to be listed")
        async with client.subscribe(tools=True) as changes:
            assert (await client.call_tool("die"))["isError"] is True
            with anyio.fail_after(20):
                change = await changes.receive()
        assert change["method"] == "notifications/tools/list_changed"
        assert "extra_000" not in {t["name"] for t in (await client.list_tools())["tools"]}


async def _answer_by_question(params: dict) -> dict:
    """Step 1? -> one, Step 2? -> two: tells apart which question an answer went to."""
    word = {"Step 1?": "one", "Step 2?": "two"}.get(params.get("message"), "other")
    return {"action": "accept", "content": {"name": word}}


@pytest.mark.parametrize("upstream_protocol", ERAS)
async def test_each_question_gets_its_own_answer(gateway: Gateway, upstream_protocol: str | None) -> None:
    """Two questions asked one after the other in one call, through a 2026-07-28 client:
    the second must not be answered with the first's answer."""
    from gwkit import answer_sample

    from mcpcli.client import ClientFeatures

    features = ClientFeatures(elicit=_answer_by_question, sample=answer_sample, roots=[])
    async with gateway([demo()], upstream_protocol=upstream_protocol, features=features) as client:
        assert texts(await client.call_tool("two_questions")) == ["one two"]


async def test_a_2026_upstreams_input_requests_reach_the_client_as_asked(gateway: Gateway) -> None:
    """Both questions of one round in one InputRequiredResult, under the upstream's keys."""
    seen: list[dict] = []

    def trace(direction: str, message: object) -> None:
        result = getattr(message, "result", None)
        if direction == "recv" and isinstance(result, dict) and "inputRequests" in result:
            seen.append(result["inputRequests"])

    async with gateway([demo()], trace=trace) as client:
        assert texts(await client.call_tool("twice")) == ["AdaAda"]
    assert [sorted(requests) for requests in seen] == [["a", "b"]]


async def test_a_client_without_sampling_gets_missing_capability(gateway: Gateway) -> None:
    """What the upstream would say to that client directly: -32021 (2026-07-28)."""
    from gwkit import answer_elicit

    from mcpcli.client import ClientFeatures

    async with gateway([demo()], features=ClientFeatures(elicit=answer_elicit)) as client:
        with pytest.raises(RPCError) as caught:
            await client.call_tool("needs_sampling")
        assert caught.value.code == -32021


async def test_a_2026_upstream_sees_the_downstream_clients_capabilities(gateway: Gateway) -> None:
    """Capabilities travel per request in 2026-07-28: the upstream is told what the client
    behind the gateway declared (here: no roots), not what the gateway could relay."""
    from gwkit import answer_elicit, answer_sample

    from mcpcli.client import ClientFeatures

    features = ClientFeatures(elicit=answer_elicit, sample=answer_sample)
    async with gateway([demo()], features=features) as client:
        with pytest.raises(RPCError) as caught:
            await client.call_tool("roots")
        assert caught.value.code == -32021
        assert texts(await client.call_tool("sample")) == ["sampled: 4"]


async def test_a_slow_upstream_call_times_out_as_a_tool_error(gateway: Gateway) -> None:
    # The upstream's timeout also bounds its start and handshake (about half a second on
    # a busy machine): 2 s, so it is the call that times out.
    async with gateway([demo("sluggish", timeout=2)]) as client:
        result = await client.call_tool("slow")
        assert result["isError"] is True
        assert "sluggish" in texts(result)[0]
        assert texts(await client.call_tool("echo", {"text": "still here"})) == ["still here"]


async def test_per_upstream_headers_reach_only_that_upstream(gateway: Gateway) -> None:

    from httpfake import FakeHTTP, legacy_mcp

    from mcpcli.toolsfile.model import Upstream

    keyed, plain = FakeHTTP(legacy_mcp()).start(), FakeHTTP(legacy_mcp()).start()
    try:
        ups = [Upstream(name="keyed", target=keyed.url, prefix="k_", headers={"X-Api-Key": "k-123"}),
               Upstream(name="plain", target=plain.url, prefix="p_")]
        async with gateway(ups) as client:
            assert texts(await client.call_tool("k_echo", {"message": "a"})) == ["echo: a"]
            assert texts(await client.call_tool("p_echo", {"message": "b"})) == ["echo: b"]
    finally:
        keyed.stop()
        plain.stop()
    assert keyed.requests and all(r.header("x-api-key") == "k-123" for r in keyed.requests)
    assert plain.requests and all(r.header("x-api-key") is None for r in plain.requests)


async def test_a_name_served_twice_goes_to_the_first_upstream_and_is_reported(gateway: Gateway) -> None:
    warnings: list[str] = []
    ups = [demo("first", env={"GATEWAY_TEST_VAR": "first"}), demo("second", env={"GATEWAY_TEST_VAR": "second"})]
    async with gateway(ups, warn=warnings.append) as client:
        assert texts(await client.call_tool("whoami"))[0].endswith(" first")
        await client.list_tools()
    assert sum("'whoami'" in line and "second" in line for line in warnings) == 1


async def test_two_clients_questions_go_each_to_its_own_client() -> None:
    """Two clients call a tool that asks a question, at the same time, through a gateway to
    a 2025-11-25 HTTP upstream: each question reaches the client whose call caused it."""
    import sys

    from gwkit import UPSTREAM, listening
    from helpers import free_port

    from mcpcli.client import Client, ClientFeatures, ClientOptions
    from mcpcli.gateway import GatewayBackend, GatewayOptions
    from mcpcli.server import Server
    from mcpcli.toolsfile.model import Upstream

    both_asked = anyio.Event()
    asked: list[str] = []

    def answering(name: str) -> ClientFeatures:
        async def elicit(params: dict) -> dict:
            asked.append(name)
            if len(asked) == 2:
                both_asked.set()
            await both_asked.wait()  # both calls are in flight, both questions out
            return {"action": "accept", "content": {"name": name}}

        return ClientFeatures(elicit=elicit)

    port = free_port()
    with listening([sys.executable, UPSTREAM, "--http", str(port)], port, what="the upstream") as url:
        options = GatewayOptions(protocol="2025-11-25", warn=lambda line: None, log=lambda line: None)
        with anyio.fail_after(30):
            async with GatewayBackend([Upstream(name="h", target=url)], options=options) as backend:
                server = Server(backend)
                async with Client(server.transport(), ClientOptions(features=answering("Ada"))) as ada, \
                        Client(server.transport(), ClientOptions(features=answering("Bob"))) as bob:
                    results: dict[str, list[str]] = {}

                    async def call(who: str, client: Client) -> None:
                        results[who] = texts(await client.call_tool("elicit"))

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(call, "Ada", ada)
                        tg.start_soon(call, "Bob", bob)
    assert results == {"Ada": ["Hello, Ada!"], "Bob": ["Hello, Bob!"]}
    assert sorted(asked) == ["Ada", "Bob"]


@pytest.mark.parametrize(("transports", "expected"), [
    (["http"], 0),                 # the only call in flight
    (["http", "http"], None),      # two HTTP clients' calls: never guess
    (["stdio", "stdio"], 1),       # one client behind a stdio gateway: its newest call
    (["stdio", "http"], None),
])
def test_an_unattributed_request_for_input_is_never_guessed_across_clients(
    transports: list[str], expected: int | None
) -> None:
    from types import SimpleNamespace

    from mcpcli.gateway.asking import Call
    from mcpcli.gateway.link import Link
    from mcpcli.gateway.options import GatewayOptions

    link = Link(demo(), GatewayOptions(), lambda *args: None)
    calls = [Call(SimpleNamespace(transport=t)) for t in transports]  # type: ignore[arg-type]
    link.asking.calls.extend(calls)
    found = link.asking.caller(asking=True, method="elicitation/create")
    assert found is (None if expected is None else calls[expected])


async def test_an_unreachable_upstream_does_not_take_the_others_down(gateway: Gateway) -> None:
    """Its tools are simply absent; it is tried again on a later request, not before the
    backoff (no failing command, or sign-in page, on every request)."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    warnings: list[str] = []
    broken = Upstream(name="broken", command=tuple(fake_server("--exit-before-init", "3")), prefix="b_")
    async with gateway([broken, demo("good", prefix="g_")], warn=warnings.append, backoff=(60, 60)) as client:
        for _ in range(3):
            names = {t["name"] for t in (await client.list_tools())["tools"]}
            assert "g_echo" in names and not any(n.startswith("b_") for n in names)
        assert texts(await client.call_tool("g_echo", {"text": "ok"})) == ["ok"]
    tried = [line for line in warnings if line.startswith("upstream broken: cannot connect")]
    assert len(tried) == 1, warnings


async def test_roots_asked_at_connect_come_from_the_client_whose_call_connected(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy server asks for roots right after the handshake; connecting lazily for a
    client's call, the gateway asks that client (not an empty list of its own)."""
    import json

    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", command=tuple(fake_server("--ask-roots", "--record", str(record))))
    async with gateway([upstream]) as client:
        import mcpcli.client.client

        # The gateway's own client waits for the server's roots/list after the handshake
        # (as a CLI call does); it ends as soon as the question came.
        monkeypatch.setattr(mcpcli.client.client, "ROOTS_WAIT", 10.0)
        result = await client.call_tool("echo", {"message": "in"})
        assert texts(result) == ["in"], result
    answers = [json.loads(line) for line in record.read_text().splitlines()]
    roots = [m["result"]["roots"] for m in answers if m.get("id") == "roots-1" and "result" in m]
    assert roots == [[{"uri": "file:///tmp/r1", "name": "r1"}]]


@pytest.mark.parametrize("protocol", ERAS)
async def test_what_was_declared_stays_declared(gateway: Gateway, protocol: str | None) -> None:
    """Connected lazily, the gateway declared prompts before it knew the upstream has none:
    the client then lists none, rather than getting "method not found"."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    async with gateway([Upstream(name="plain", command=tuple(fake_server()))], protocol=protocol) as client:
        assert client.offers("prompts")
        assert "echo" in {t["name"] for t in (await client.list_tools())["tools"]}
        assert (await client.list_prompts())["prompts"] == []
        assert (await client.list_resources())["resources"] == []


LOCAL_TOOLS = """\
version: 1
server: {name: local-and-upstreams, version: "1"}
tools:
  - name: hello
    description: Says hello.
    run: {shell: sh, script: "printf 'hello from the file'"}
  - name: echo
    description: The local echo wins over an unprefixed upstream echo.
    run: {shell: sh, script: "printf 'local echo'"}
resources:
  - uri: test://local
    name: local
    text: local text
prompts:
  - name: local_prompt
    arguments:
      city: {description: A city, complete: [paris, park]}
    messages:
      - text: "In {{ city }}"
"""


async def test_a_local_backend_merged_with_prefixed_upstreams(gateway: Gateway, tmp_path: Path) -> None:
    """What `servers:` in a tools.yaml builds: the file's own tools unprefixed and first,
    each upstream's under its prefix; resources of all, each read routed to its owner."""
    from mcpcli.toolsfile.backend import ToolsBackend

    path = tmp_path / "tools.yaml"
    path.write_text(LOCAL_TOOLS)
    local = ToolsBackend(path, environ={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    try:
        async with gateway([demo("up", prefix="up_"), demo("bare")], local=local) as client:
            assert client.server_info["name"] == "local-and-upstreams"
            names = [t["name"] for t in (await client.list_tools())["tools"]]
            assert names[:2] == ["hello", "echo"] and "up_echo" in names and "whoami" in names
            assert texts(await client.call_tool("hello")) == ["hello from the file"]
            assert texts(await client.call_tool("echo", {})) == ["local echo"]
            assert texts(await client.call_tool("up_echo", {"text": "x"})) == ["x"]
            uris = [r["uri"] for r in (await client.list_resources())["resources"]]
            assert uris == ["test://local", "mem://greeting", "mem://blob"]
            assert (await client.read_resource("test://local"))["contents"][0]["text"] == "local text"
            assert (await client.read_resource("mem://greeting"))["contents"][0]["text"] == "hello"
            assert (await client.read_resource("mem://items/7"))["contents"][0]["text"] == "7"
            prompts = [p["name"] for p in (await client.list_prompts())["prompts"]]
            assert prompts[0] == "local_prompt" and "up_greet" in prompts and "greet" in prompts
            local_done = await client.complete({"type": "ref/prompt", "name": "local_prompt"}, "city", "par")
            assert local_done["completion"]["values"] == ["paris", "park"]
            up_done = await client.complete({"type": "ref/prompt", "name": "up_greet"}, "who", "b")
            assert up_done["completion"]["values"] == ["bob"]
    finally:
        local.close()


async def test_a_change_only_to_hidden_tools_is_not_announced() -> None:
    """Re-filtered: the upstream adds a tool the filter hides (no announcement), then
    announces a change it did not make (passed on)."""
    from types import SimpleNamespace

    from mcpcli.gateway import GatewayBackend, GatewayOptions

    seen: list[str] = []
    ctx: Any = SimpleNamespace(client_capabilities={}, transport="stdio")
    options = GatewayOptions(warn=lambda line: None, log=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([demo(tools=ToolFilter(deny=("extra_*",)))], options=options) as backend:
            backend.set_change_listener(lambda kind, uri: seen.append(kind))
            before = [t["name"] for t in await backend.list_tools()]
            link = backend.links[0]
            assert texts(await backend.call_tool("grow", {}, ctx)) == ["1 extra tools"]
            await wait_until_async(lambda: any(t["name"] == "extra_000" for t in link.tools or []), 10,
                                   "the gateway to list the upstream again")
            assert [t["name"] for t in await backend.list_tools()] == before
            assert seen == []
            assert texts(await backend.call_tool("change", {"text": "tools"}, ctx)) == ["changed"]
            await wait_until_async(lambda: seen and link.previous.get("tools") == link.tools, 10,
                                   "the announcement")
            # One more round trip to the upstream: anything still on its way has arrived.
            assert texts(await backend.call_tool("echo", {"text": "x"}, ctx)) == ["x"]
    assert seen == ["tools"]


async def test_an_upstream_still_starting_does_not_hold_up_the_list(gateway: Gateway, tmp_path: Path) -> None:
    """Its tools are left out of the first answer, and announced when they arrive."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    booted = tmp_path / "booted"
    slow = Upstream(name="slow", command=tuple(fake_server("--slow-modern", "0", "--hold-discover", str(booted))),
                    prefix="s_")
    async with gateway([demo("quick", prefix="q_"), slow], list_wait=3.0) as client:
        async with client.subscribe(tools=True) as changes:
            first = {t["name"] for t in (await client.list_tools())["tools"]}
            assert "q_echo" in first and "s_echo" not in first
            booted.touch()
            with anyio.fail_after(20):
                change = await changes.receive()
        assert change["method"] == "notifications/tools/list_changed"
        assert "s_echo" in {t["name"] for t in (await client.list_tools())["tools"]}


async def test_an_upstream_that_ends_on_the_probe_is_started_again(gateway: Gateway, tmp_path: Path) -> None:
    """An rmcp-like upstream (it ends when its first message is not `initialize`) is started
    again and asked `initialize`, as by a command; not reported as a crash."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    starts = tmp_path / "starts"
    upstream = Upstream(name="rs", command=tuple(fake_server("--initialize-first", "close", "--starts", str(starts))))
    async with gateway([upstream]) as client:
        assert texts(await client.call_tool("echo", {"message": "hi"})) == ["hi"]
    assert len(starts.read_text().splitlines()) == 2


async def test_a_lone_upstream_is_waited_for(gateway: Gateway) -> None:
    """With nothing else to answer for (`mcp serve --proxy`), the first list waits for it."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    slow = Upstream(name="slow", command=tuple(fake_server("--slow-modern", "1")))
    async with gateway([slow], list_wait=0.2) as client:
        assert "echo" in {t["name"] for t in (await client.list_tools())["tools"]}


async def test_a_client_that_leaves_without_unsubscribing_releases_the_upstream_subscription(
    tmp_path: Path,
) -> None:
    """A 2025-era client subscribes through the gateway and disconnects without
    `resources/unsubscribe`: the gateway unsubscribes upstream (the last follower left)."""
    import json

    from helpers import fake_server

    from mcpcli.client import Client, ClientOptions
    from mcpcli.gateway import GatewayBackend, GatewayOptions
    from mcpcli.server import Server
    from mcpcli.toolsfile.model import Upstream

    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", resources=True,
                        command=tuple(fake_server("--features", "--record", str(record))))

    def upstream_got(method: str) -> list[str]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [m["params"]["uri"] for m in map(json.loads, lines) if m.get("method") == method]

    options = GatewayOptions(eager=True, log=lambda line: None, warn=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([upstream], options=options) as backend:
            server = Server(backend)
            async with server:
                async with Client(server.transport(), ClientOptions(protocol="2025-11-25")) as client:
                    await client.request("resources/subscribe", {"uri": "file:///a"})
                    await wait_until_async(lambda: upstream_got("resources/subscribe") == ["file:///a"],
                                           what="the upstream subscription")
                # The client is gone; the gateway (still running) lets go upstream.
                await wait_until_async(lambda: upstream_got("resources/unsubscribe") == ["file:///a"],
                                       what="the upstream unsubscription")


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_subscription_is_answered_once_the_upstream_follows_the_resource(
    tmp_path: Path, protocol: str | None
) -> None:
    """The gateway answers a client's subscription (`resources/subscribe`, or the listen
    stream's acknowledgement) only once its own upstream subscription is answered, so an
    update right after it is not lost upstream."""
    import json

    from helpers import fake_server

    from mcpcli.client import Client, ClientOptions
    from mcpcli.gateway import GatewayBackend, GatewayOptions
    from mcpcli.server import Server
    from mcpcli.toolsfile.model import Upstream

    record = tmp_path / "record.jsonl"
    upstream = Upstream(name="fs", resources=True,
                        command=tuple(fake_server("--features", "--record", str(record))))

    def upstream_got(method: str) -> list[str]:
        lines = record.read_text().splitlines() if record.exists() else []
        return [m["params"]["uri"] for m in map(json.loads, lines) if m.get("method") == method]

    options = GatewayOptions(eager=True, log=lambda line: None, warn=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([upstream], options=options) as backend:
            async with Server(backend) as server:
                async with Client(server.transport(), ClientOptions(protocol=protocol)) as client:
                    async with client.subscribe(resources=["file:///a"]):
                        assert upstream_got("resources/subscribe") == ["file:///a"]


async def test_an_upstream_that_never_lists_is_not_asked_again_and_again(
    gateway: Gateway, tmp_path: Path
) -> None:
    """A listing that times out after the others were served is a failure, not a late
    arrival: no re-list (which would time out again, forever), no new request before the
    backoff, and no `list_changed` though nothing changed."""
    from helpers import fake_server, wait_until_async

    from mcpcli.toolsfile.model import Upstream

    record = tmp_path / "hung.ndjson"
    # Its timeout also bounds its start and handshake: 2 s leaves them slack on a busy machine.
    hung = Upstream(name="hung", command=tuple(fake_server("--never-list", "--record", str(record))),
                    prefix="h_", timeout=2)

    def received(method: str) -> int:
        lines = record.read_text().splitlines() if record.exists() else []
        return sum(1 for line in lines if f'"{method}"' in line)

    async with gateway([demo("good", prefix="g_"), hung], list_wait=0.2, backoff=(60, 60)) as client:
        await client.backend.links[0].listing("tools")  # type: ignore[attr-defined]  # started
        async with client.subscribe(tools=True) as changes:
            names = {t["name"] for t in (await client.list_tools())["tools"]}
            assert "g_echo" in names and not any(n.startswith("h_") for n in names)
            await wait_until_async(lambda: received("notifications/cancelled") >= 1, what="the timeout")
            for _ in range(3):
                names = {t["name"] for t in (await client.list_tools())["tools"]}
                assert "g_echo" in names
            assert received("tools/list") == 1
            with pytest.raises(anyio.WouldBlock):
                changes.receive_nowait()


async def test_a_lone_unreachable_upstream_is_an_error_naming_it_not_an_empty_list(gateway: Gateway) -> None:
    """`mcp serve --proxy` to an upstream that cannot be reached: a listing fails with a
    JSON-RPC error naming the upstream and the cause; a call is a tool error saying so."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    broken = Upstream(name="broken", command=tuple(fake_server("--exit-before-init", "3")))
    async with gateway([broken], backoff=(60, 60)) as client:
        with pytest.raises(RPCError) as listed:
            await client.list_tools()
        assert "upstream broken" in listed.value.rpc_message
        called = await client.call_tool("echo", {"message": "x"})
        assert called.get("isError") is True
        assert "upstream broken" in texts(called)[0] and "not available" in texts(called)[0]


async def test_a_name_of_an_unreachable_upstream_is_unavailable_not_unknown(gateway: Gateway) -> None:
    """With several upstreams the reachable ones are listed; a name that only the
    unreachable one could serve gets its Unavailable error (tool: isError; prompt: a
    JSON-RPC error naming it), not "unknown"."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    broken = Upstream(name="broken", command=tuple(fake_server("--exit-before-init", "3")), prefix="b_")
    async with gateway([demo("good", prefix="g_"), broken], backoff=(60, 60)) as client:
        names = {t["name"] for t in (await client.list_tools())["tools"]}
        assert "g_echo" in names
        called = await client.call_tool("b_echo", {"message": "x"})
        assert called.get("isError") is True and "upstream broken" in texts(called)[0]
        with pytest.raises(RPCError) as prompted:
            await client.get_prompt("b_weather", {})
        assert "upstream broken" in prompted.value.rpc_message
        assert texts(await client.call_tool("g_echo", {"text": "ok"})) == ["ok"]


async def test_eager_start_survives_a_lone_upstream_whose_listing_fails(gateway: Gateway) -> None:
    """`--eager` lists at start: a lone upstream that connects but cannot list does not stop
    the gateway from serving (a list then names the upstream and the cause)."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    # Its timeout also bounds its start and handshake: 2 s leaves them slack on a busy machine.
    hung = Upstream(name="hung", command=tuple(fake_server("--never-list")), timeout=2)
    async with gateway([hung], eager=True, backoff=(60, 60)) as client:
        with pytest.raises(RPCError) as listed:
            await client.list_tools()
        assert "upstream hung: listing tools" in listed.value.rpc_message


@pytest.mark.parametrize("downstream", ERAS)
async def test_a_burst_of_list_changes_costs_at_most_two_listings_per_kind(
    gateway: Gateway, tmp_path: Path, downstream: str | None
) -> None:
    """An upstream sends 1,000 list_changed of each kind in one burst: the gateway asks it
    for each listing at most twice more (one in flight, one after), tells its clients at
    most twice, and ends up serving the final lists."""
    import json

    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    record = tmp_path / "changing.ndjson"
    burst = 1000
    upstream = Upstream(name="up", command=tuple(fake_server("--changing", "--record", str(record))))
    methods = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")

    def listings() -> dict[str, int]:
        got = [json.loads(line).get("method") for line in record.read_text().splitlines()]
        return {method: got.count(method) for method in methods}

    async def served() -> list[str]:
        return [(await client.list_tools())["tools"][0]["name"],
                (await client.list_prompts())["prompts"][0]["name"],
                (await client.list_resources())["resources"][0]["name"],
                (await client.list_resource_templates())["resourceTemplates"][0]["name"]]

    async with gateway([upstream], protocol=downstream) as client:
        async with client.subscribe(tools=True, prompts=True, resource_list=True) as changes:
            assert await served() == ["v0", "p0", "r0", "t0"]
            before = listings()
            assert texts(await client.call_tool("burst", {"count": burst})) == [f"generation {burst}"]
            backend = client.backend  # type: ignore[attr-defined]
            await wait_until_async(lambda: backend.relisting == 0, 20, "the relisting to end")
            assert await served() == [f"v{burst}", f"p{burst}", f"r{burst}", f"t{burst}"]
            after = listings()
            assert all(after[m] - before[m] <= 2 for m in methods), (before, after)
            assert after["tools/list"] > before["tools/list"]  # it did look again
            announced = [f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")]
            told: list[str] = []
            with anyio.fail_after(10):
                while not set(announced) <= set(told):
                    told.append((await changes.receive())["method"])
            with contextlib.suppress(anyio.WouldBlock):
                while True:
                    told.append(changes.receive_nowait()["method"])
        assert all(told.count(method) <= 2 for method in announced), told


@pytest.mark.parametrize("protocol", ERAS)
async def test_the_gateway_answers_ping_itself_in_every_era(gateway: Gateway, protocol: str | None) -> None:
    """A ping is the gateway's to answer (2026-07-28 included: real clients send it), even
    when its upstream cannot be reached."""
    from helpers import fake_server

    from mcpcli.toolsfile.model import Upstream

    broken = Upstream(name="broken", command=tuple(fake_server("--exit-before-init", "3")))
    async with gateway([broken], protocol=protocol, backoff=(60, 60)) as client:
        result = await client.request("ping")
        assert set(result) <= {"resultType", "_meta"} and result.get("resultType", "complete") == "complete"


async def test_a_stdio_upstreams_era_probe_waits_the_gateways_probe_timeout() -> None:
    """`MCP_PROBE_TIMEOUT` reaches `mcp serve`'s upstreams (`GatewayOptions.probe_timeout`)."""
    from mcpcli.gateway import GatewayBackend, GatewayOptions

    options = GatewayOptions(probe_timeout=0.5, eager=True, log=lambda line: None, warn=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([demo()], options=options) as backend:
            client = backend.links[0].client
            assert client is not None and client.options.probe_timeout == 0.5
