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
from helpers import wait_until_async

from mcpcli.errors import RPCError
from mcpcli.toolsfile.model import ToolFilter, Upstream

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HEAD = "version: 1\n"
DEMO = json.dumps([sys.executable, UPSTREAM])


def texts(result: dict) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def team_file(tmp_path: Path, *, name: str = "team.yaml", extra: str = "") -> Path:
    """A team tools.yaml: a local tool, and the demo upstream as `gh` (prefix gh_, no deletes)."""
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(f"""\
        tools:
          - {{name: shared, description: the team's own, mock: {{text: team tool}}}}
        servers:
          - name: gh
            command: {DEMO}
            tools: {{deny: ["delete_*"]}}
        """) + extra)
    return path


def team(path: Path, **fields: object) -> Upstream:
    return Upstream(name="team", target=str(path), prefix="team_", **fields)  # type: ignore[arg-type]


async def names(client: object) -> set[str]:
    return {t["name"] for t in (await client.list_tools())["tools"]}  # type: ignore[attr-defined]


async def test_a_nested_file_serves_its_upstreams_under_both_prefixes(gateway: Gateway, tmp_path: Path) -> None:
    async with gateway([team(team_file(tmp_path))]) as client:
        served = await names(client)
        # Outer prefix on top of the inner one; the team file's own tool under the outer prefix.
        assert {"team_shared", "team_gh_echo", "team_gh_whoami"} <= served
        assert not {"echo", "gh_echo", "team_echo", "shared"} & served
        assert texts(await client.call_tool("team_gh_echo", {"text": "hi"})) == ["hi"]
        assert texts(await client.call_tool("team_shared")) == ["team tool"]


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


async def test_a_nested_file_relative_target_resolves_next_to_it(gateway: Gateway, tmp_path: Path) -> None:
    """team/team.yaml names `inner.yaml`: found in team/, not where the gateway runs."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "inner.yaml").write_text(
        HEAD + "tools:\n  - {name: deep, description: d, mock: {text: from inner}}\n")
    path = tmp_path / "team" / "team.yaml"
    path.write_text(HEAD + "servers:\n  - {name: in, target: inner.yaml}\n")
    async with gateway([team(path)]) as client:
        assert texts(await client.call_tool("team_in_deep")) == ["from inner"]


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


async def test_eager_starts_the_nested_upstreams_too(gateway: Gateway, tmp_path: Path) -> None:
    async with gateway([team(team_file(tmp_path))], eager=True) as client:
        outer = client.backend.links[0]  # type: ignore[attr-defined]
        assert outer.connected
        inner = outer._client.transport.backend  # the nested gateway behind the in-process link
        assert [link.connected for link in inner.links] == [True]


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
