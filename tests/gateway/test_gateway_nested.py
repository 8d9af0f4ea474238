"""Nested gateways: a tools.yaml upstream with `servers:` of its own, served in-process with
its upstreams behind it (a team file fronting a stdio server, included in a personal one)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from gwkit import UPSTREAM, Gateway
from helpers import mcp_in, wait_until_async

from mcpcli.errors import RPCError
from mcpcli.toolsfile.model import ToolFilter, Upstream

pytestmark = [pytest.mark.slow]

HEAD = "version: 1\n"
DEMO = json.dumps([sys.executable, UPSTREAM])


def texts(result: dict) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def team_file(tmp_path: Path, *, name: str = "team.yaml", extra: str = "",
              tools: str = '{deny: ["delete_*"]}') -> Path:
    """A team tools.yaml: a local tool, and the demo upstream as `gh` (prefix gh_, no deletes)."""
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(f"""\
        tools:
          - {{name: shared, description: the team's own, mock: {{text: team tool}}}}
        servers:
          - name: gh
            command: {DEMO}
            tools: {tools}
        """) + extra)
    return path


def team(path: Path, **fields: object) -> Upstream:
    return Upstream(name="team", target=str(path), prefix="team_", **fields)  # type: ignore[arg-type]


async def names(client: object) -> set[str]:
    return {t["name"] for t in (await client.list_tools())["tools"]}  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_nested_file_serves_its_upstreams_under_both_prefixes(gateway: Gateway, tmp_path: Path) -> None:
    async with gateway([team(team_file(tmp_path))]) as client:
        served = await names(client)
        # Outer prefix on top of the inner one; the team file's own tool under the outer prefix.
        assert {"team_shared", "team_gh_echo", "team_gh_whoami"} <= served
        assert not {"echo", "gh_echo", "team_echo", "shared"} & served
        assert texts(await client.call_tool("team_gh_echo", {"text": "hi"})) == ["hi"]
        assert texts(await client.call_tool("team_shared")) == ["team tool"]


@pytest.mark.anyio
async def test_the_inner_filter_holds_through_the_outer_and_the_outer_one_applies_on_top(
        gateway: Gateway, tmp_path: Path) -> None:
    # The outer filter matches the names the inner gateway serves (inner prefix included).
    outer = team(team_file(tmp_path), tools=ToolFilter(deny=("gh_who*",)))
    async with gateway([outer]) as client:
        served = await names(client)
        assert "team_gh_echo" in served
        assert "team_gh_whoami" not in served  # the outer deny
        assert "team_gh_delete_all" not in served  # the inner deny
        for name in ("team_gh_delete_all", "team_gh_whoami", "team_delete_all"):
            with pytest.raises(RPCError) as caught:
                await client.call_tool(name)
            assert caught.value.code == -32602


@pytest.mark.anyio
async def test_a_nested_file_relative_target_resolves_next_to_it(gateway: Gateway, tmp_path: Path) -> None:
    """team/team.yaml names `inner.yaml`: found in team/, not where the gateway runs."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "inner.yaml").write_text(
        HEAD + "tools:\n  - {name: deep, description: d, mock: {text: from inner}}\n")
    path = tmp_path / "team" / "team.yaml"
    path.write_text(HEAD + "servers:\n  - {name: in, target: inner.yaml}\n")
    async with gateway([team(path)]) as client:
        assert texts(await client.call_tool("team_in_deep")) == ["from inner"]


@pytest.mark.anyio
async def test_nested_upstreams_are_restarted_and_stopped_with_the_outer_gateway(
        gateway: Gateway, tmp_path: Path) -> None:
    async with gateway([team(team_file(tmp_path))], eager=True) as client:
        first = texts(await client.call_tool("team_gh_whoami"))[0].split()[0]
        assert (await client.call_tool("team_gh_die"))["isError"] is True
        later: list[str] = []

        async def restarted() -> bool:
            result = await client.call_tool("team_gh_whoami")
            if result.get("isError"):
                return False
            later.append(texts(result)[0].split()[0])
            return later[-1] != first

        await wait_until_async(restarted, 20, "the nested upstream to be restarted")
    # Stopping the outer gateway stopped the inner one's upstream (and nothing else is left:
    # conftest's leftover-process check would fail the test).
    for pid in (first, later[-1]):
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


@pytest.mark.anyio
async def test_eager_starts_the_nested_upstreams_too(gateway: Gateway, tmp_path: Path) -> None:
    async with gateway([team(team_file(tmp_path))], eager=True) as client:
        outer = client.backend.links[0]  # type: ignore[attr-defined]
        assert outer.connected
        inner = outer.client.transport.backend  # the nested gateway behind the in-process link
        assert [link.connected for link in inner.links] == [True]


@pytest.mark.anyio
async def test_a_nested_list_change_reaches_the_outer_client(gateway: Gateway, tmp_path: Path) -> None:
    notes: list[tuple[str, dict]] = []
    async with gateway([team(team_file(tmp_path))], notes=notes) as client:
        assert "team_gh_extra_000" not in await names(client)
        async with client.subscribe(tools=True) as changes:
            assert texts(await client.call_tool("team_gh_grow")) == ["1 extra tools"]
            with anyio.fail_after(10):
                change = await changes.receive()
        assert change["method"] == "notifications/tools/list_changed"
        assert "team_gh_extra_000" in await names(client)


# -- the command: cycles, depth, --check --connect, --proxy FILE ----------------------------


def servers_of(path: Path, *targets: str, own: str = "") -> Path:
    """A tools.yaml at `path` whose `servers:` are the tools.yaml files `targets` (prefix: stem_)."""
    entries = "".join(f"  - name: {Path(t).stem}\n    target: {t}\n" for t in targets)
    path.write_text(HEAD + own + "servers:\n" + entries)
    return path


def test_a_cycle_through_another_file_is_an_error_at_the_target_that_closes_it(tmp_path: Path) -> None:
    a = servers_of(tmp_path / "a.yaml", "b.yaml")
    b = servers_of(tmp_path / "b.yaml", "a.yaml")
    expected = (f"{b}:4:13: error: server 'a': target: a cycle of tools.yaml files: {a} -> {b} -> {a} "
                "(a tools.yaml may not be its own upstream, directly or through others)")
    for args in (["--check"], ["--check", "--connect"], []):  # checked, and at start before serving
        result = mcp_in("serve", *args, str(a), timeout=30)
        assert result.code == 2, result
        assert result.stdout == ""
        assert result.stderr.splitlines() == [expected], result.stderr
    # --proxy FILE: the same check; the cycle closes at a's entry for b.
    result = mcp_in("serve", "--proxy", str(b), timeout=30)
    assert result.code == 2, result
    assert result.stderr.splitlines() == [
        f"{a}:4:13: error: server 'b': target: a cycle of tools.yaml files: {b} -> {a} -> {b} "
        "(a tools.yaml may not be its own upstream, directly or through others)"]


def test_nesting_is_bounded(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i}.yaml" for i in range(10)]
    for i, path in enumerate(files[:-1]):
        servers_of(path, files[i + 1].name)
    files[-1].write_text(HEAD + "tools:\n  - {name: t, description: d, mock: {text: hi}}\n")
    result = mcp_in("serve", "--check", str(files[0]), timeout=30)
    assert result.code == 2, result
    # f0 (served) .. f7 are eight levels: f8 would be the ninth.
    assert result.stderr.splitlines() == [
        f"{files[7]}:4:13: error: server 'f8': target: {files[8]}: tools.yaml files nest more than 8 deep "
        "here (serve the deepest ones on their own and reach them by URL or command)"]
    assert mcp_in("serve", "--check", str(files[2]), timeout=30).code == 0  # f2 .. f9: eight deep is fine


def test_a_nested_file_that_does_not_load_stops_the_start_where_it_fails(tmp_path: Path) -> None:
    servers_of(tmp_path / "top.yaml", "team.yaml")
    (tmp_path / "team.yaml").write_text(HEAD + "servers:\n  - {name: gh, target: github}\n  - {name: x}\n")
    result = mcp_in("serve", str(tmp_path / "top.yaml"), timeout=30)
    assert result.code == 2, result
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'team.yaml'}:4:5: error: server 'x': missing target"), lines
    # A target name unknown to the user's config, in the nested file: said there too.
    (tmp_path / "team.yaml").write_text(HEAD + "servers:\n  - {name: gh, target: github}\n")
    result = mcp_in("serve", "--check", str(tmp_path / "top.yaml"), timeout=30)
    assert result.code == 2, result
    assert result.stderr.startswith(f"{tmp_path / 'team.yaml'}:3:5: error: server 'gh': unknown server 'github'")


def test_serve_proxy_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = mcp_in("serve", "--proxy", str(tmp_path / "gone.yaml"), timeout=30)
    assert result.code == 2, result
    assert result.stdout == ""
    assert result.stderr == f"mcp serve: --proxy: server 'gone': no such file: {tmp_path / 'gone.yaml'}\n"


def test_check_connect_reaches_nested_upstreams_and_reports_their_collisions_where_they_are(
        tmp_path: Path) -> None:
    top = servers_of(tmp_path / "top.yaml", "team.yaml",
                     own="tools:\n  - {name: mine, description: d, mock: {text: hi}}\n")
    team = team_file(tmp_path, tools="{read_only: true}")  # echo and whoami
    result = mcp_in("serve", "--check", "--connect", str(top), timeout=60)
    assert result.code == 0, result
    assert result.stderr.splitlines() == [
        f"mcp: {team}:5:5: server 'gh': reached (2 tools, 2 prompts, 3 resources)",
        # The team file as the gateway serves it: gh's tools and its own one.
        f"mcp: {top}:5:5: server 'team': reached (3 tools, 2 prompts, 3 resources)",
        f"mcp: {top}: valid (1 tool, 0 resources, 0 prompts, 1 server)",
    ]
    # A name the team file serves from gh collides with one of the top file's own.
    top.write_text(top.read_text().replace("name: mine", "name: team_gh_echo"))
    result = mcp_in("serve", "--check", "--connect", str(top), timeout=60)
    assert result.code == 2, result
    assert [line for line in result.stderr.splitlines() if ": error: " in line] == [
        f"{top}:5:5: error: server 'team': tool 'team_gh_echo' is also a tool of this file"], result.stderr
    # A collision inside the team file is reported in the team file.
    team.write_text(team.read_text().replace(
        "tools:\n", "tools:\n  - {name: gh_echo, description: mine, mock: {text: hi}}\n", 1))
    result = mcp_in("serve", "--check", "--connect", str(top), timeout=60)
    assert result.code == 2, result
    assert [line for line in result.stderr.splitlines() if ": error: " in line] == [
        f"{team}:6:5: error: server 'gh': tool 'gh_echo' is also a tool of this file"], result.stderr


@pytest.mark.anyio
async def test_a_cycle_made_after_the_check_is_refused_when_that_level_connects(tmp_path: Path) -> None:
    """The files may change between the check at start and a lazy connection: each level
    checks the chain of files above it again, and only that upstream is left out."""
    from mcpcli.client import Client
    from mcpcli.gateway import GatewayOptions
    from mcpcli.gateway.serve_file import served_backend
    from mcpcli.server import Server
    from mcpcli.toolsfile.backend import ToolsBackend

    own = "tools:\n  - {{name: {0}, description: d, mock: {{text: {0}}}}}\n"
    a = servers_of(tmp_path / "a.yaml", "b.yaml", own=own.format("mine"))
    servers_of(tmp_path / "b.yaml", "a.yaml", own=own.format("theirs"))
    warned: list[str] = []
    local = ToolsBackend(a)
    try:
        options = GatewayOptions(warn=warned.append, log=lambda line: None)
        async with served_backend(local, watch=False, options=options) as served, \
                Client(Server(served).transport()) as client:
            assert await names(client) == {"mine", "b_theirs"}
            assert texts(await client.call_tool("b_theirs")) == ["theirs"]
    finally:
        local.close()
    assert any(line.startswith(f"upstream b: upstream a: cannot connect: a cycle of tools.yaml files: {a} -> ")
               for line in warned), warned


@pytest.mark.anyio
@pytest.mark.parametrize(("protocol", "upstream_protocol"), [(None, None), ("2025-11-25", "2025-11-25")])
async def test_input_progress_and_logs_cross_both_levels(
        gateway: Gateway, tmp_path: Path, protocol: str | None, upstream_protocol: str | None) -> None:
    """The inner upstream's requests for input (elicitation, sampling, roots), progress and
    log messages reach the client whose call caused them, through both gateways."""
    notes: list[tuple[str, dict]] = []
    async with gateway([team(team_file(tmp_path))], protocol=protocol, upstream_protocol=upstream_protocol,
                       notes=notes, log_level="debug") as client:
        assert texts(await client.call_tool("team_gh_elicit")) == ["Hello, Ada!"]
        assert texts(await client.call_tool("team_gh_sample")) == ["sampled: 4"]
        assert texts(await client.call_tool("team_gh_roots")) == ["roots: file:///tmp/r1"]
        assert texts(await client.call_tool("team_gh_two_questions")) == ["Ada Ada"]
        progress: list[float] = []
        await client.call_tool("team_gh_progress", on_progress=lambda p: progress.append(p["progress"]))
        assert progress == [0, 50, 100]
        await client.set_log_level("warning")
        assert texts(await client.call_tool("team_gh_log")) == ["logged"]
        assert [p["level"] for m, p in notes if m == "notifications/message"] == ["warning", "error"]


def test_serve_proxy_file_serves_a_nested_file_end_to_end(tmp_path: Path) -> None:
    """`mcp serve --proxy team.yaml` as a client starts it: the team file's upstream behind it."""
    team_file(tmp_path)
    served = ["--", sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy", str(tmp_path / "team.yaml")]
    listed = mcp_in("tools", "list", "--json", *served, timeout=60)
    assert listed.code == 0, listed
    served_names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert {"shared", "gh_echo"} <= served_names and "gh_delete_all" not in served_names
    called = mcp_in("tools", "call", "gh_echo", "--arg", "text=hi", "--json", *served, timeout=60)
    assert called.code == 0, called
    assert texts(json.loads(called.stdout)) == ["hi"]


@pytest.mark.peer
@pytest.mark.anyio
async def test_server_everything_behind_a_nested_file(gateway: Gateway, tmp_path: Path, everything: list[str]) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(HEAD + f"servers:\n  - name: ev\n    command: {json.dumps(everything)}\n"
                    "    tools: {allow: [echo, get-sum]}\n")
    async with gateway([team(path)]) as client:
        assert await names(client) == {"team_ev_echo", "team_ev_get-sum"}
        result = await client.call_tool("team_ev_get-sum", {"a": 2, "b": 3})
        assert not result.get("isError") and "5" in texts(result)[0], result


@pytest.mark.parametrize(("server", "name"), [("server: {name: team-gw, version: '2.1'}\n", "team-gw"), ("", "fronts")])
def test_a_file_of_upstreams_only_is_named_as_the_file_says(tmp_path: Path, server: str, name: str) -> None:
    """A tools.yaml with nothing but `servers:` is still that file: its `server.name` (else
    the file's name), not "mcpcli gateway to ..." as `--proxy` names itself."""
    path = tmp_path / "fronts.yaml"
    path.write_text(HEAD + server + f"servers:\n  - {{name: gh, command: {DEMO}}}\n")
    done = mcp_in("info", str(path), "--json")
    assert done.code == 0, done
    assert json.loads(done.stdout)["serverInfo"]["name"] == name


@pytest.mark.anyio
async def test_mcp_serve_names_a_file_of_upstreams_only_as_the_file_says(tmp_path: Path) -> None:
    from mcpcli.gateway.serve_file import served_backend
    from mcpcli.toolsfile.backend import ToolsBackend

    path = tmp_path / "fronts.yaml"
    path.write_text(HEAD + "server: {name: team-gw}\n" + f"servers:\n  - {{name: gh, command: {DEMO}}}\n")
    local = ToolsBackend(str(path))
    try:
        async with served_backend(local, watch=False) as backend:
            assert backend.server_info()["name"] == "team-gw"
    finally:
        local.close()
