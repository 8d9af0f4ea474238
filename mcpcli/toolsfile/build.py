"""Build the `Config` from a structurally valid tools.yaml document, checking its meaning.

`build_config` resolves the secrets, then builds every tool (`build_tools`),
resource (`build_resources`), prompt (`build_prompts`) and upstream server
(`build_servers`), skipping disabled tools and reporting duplicates. It returns
the config together with every problem found; `load.parse_config` raises them
as one `ToolsFileError`.
"""

from __future__ import annotations

import os
from pathlib import Path as FsPath

from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.build_prompts import build_prompt
from mcpcli.toolsfile.build_resources import build_resource
from mcpcli.toolsfile.build_servers import build_servers
from mcpcli.toolsfile.build_tools import build_tool
from mcpcli.toolsfile.model import JSON, Config, Prompt, Resource, Tool
from mcpcli.toolsfile.yamlstrict import Marks, Problem

__all__ = ["build_config"]


def build_config(raw: JSON, marks: Marks, path: str, env: dict[str, str]) -> tuple[Config, list[Problem]]:
    """The model of `raw` (read from `path`), and the problems found (empty when it is valid)."""
    ctx = BuildContext(raw, marks, path, env)
    _secrets(ctx)
    server = dict(raw.get("server") or {})
    info = _server_info(ctx, server)
    tools = _tools(ctx)
    resources = _resources(ctx)
    prompts = _prompts(ctx)
    servers = build_servers(ctx)
    config = Config(
        path=ctx.file,
        base_dir=ctx.base_dir,
        server=info,
        instructions=server.get("instructions"),
        limits=ctx.limits,
        secrets=dict(ctx.secrets),
        tools=tools,
        resources=tuple(resources),
        prompts=prompts,
        warnings=tuple(ctx.warnings),
        servers=servers,
    )
    return config, ctx.problems


def _server_info(ctx: BuildContext, server: JSON) -> JSON:
    """The serverInfo: the file's name (without .yaml) unless `server.name` says otherwise."""
    info: JSON = {"name": server.get("name") or FsPath(ctx.file).stem,
                  "version": server.get("version") or "0"}
    if server.get("title"):
        info["title"] = server["title"]
    if server.get("website_url"):
        info["websiteUrl"] = server["website_url"]
    return info


def _tools(ctx: BuildContext) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for i, item in enumerate(ctx.raw.get("tools") or []):
        path = ("tools", i)
        if item.get("enabled") is False:
            continue
        tool = build_tool(ctx, item, path)
        if tool is None:
            continue
        if tool.name in tools:
            ctx.fail((*path, "name"), f"duplicate tool name {tool.name!r}")
            continue
        tools[tool.name] = tool
    return tools


def _resources(ctx: BuildContext) -> list[Resource]:
    resources: list[Resource] = []
    seen_uris: set[str] = set()
    for i, item in enumerate(ctx.raw.get("resources") or []):
        res = build_resource(ctx, item, ("resources", i))
        if res is None:
            continue
        key = res.uri_template if res.kind == "template" else f"{res.kind}:{res.uri}"
        if key in seen_uris:
            ctx.fail(("resources", i), f"duplicate resource {key!r}")
            continue
        seen_uris.add(key or "")
        resources.append(res)
    return resources


def _prompts(ctx: BuildContext) -> dict[str, Prompt]:
    prompts: dict[str, Prompt] = {}
    for i, item in enumerate(ctx.raw.get("prompts") or []):
        prompt = build_prompt(ctx, item, ("prompts", i))
        if prompt is None:
            continue
        if prompt.name in prompts:
            ctx.fail(("prompts", i, "name"), f"duplicate prompt name {prompt.name!r}")
            continue
        prompts[prompt.name] = prompt
    return prompts


def _secrets(ctx: BuildContext) -> None:
    """Read every declared secret into `ctx.secrets` (a missing optional one is left out)."""
    for name, spec in (ctx.raw.get("secrets") or {}).items():
        path = ("secrets", name)
        required = spec.get("required", True)
        sources = [k for k in ("from_env", "from_file") if k in spec]
        if len(sources) != 1:
            ctx.fail(path, "give exactly one of from_env or from_file", key=True)
            continue
        value: str | None = None
        if "from_env" in spec:
            value = ctx.env.get(spec["from_env"])
            missing = f"environment variable {spec['from_env']} is not set"
        else:
            file = os.path.join(ctx.base_dir, os.path.expanduser(spec["from_file"]))
            missing = f"cannot read {spec['from_file']}"
            try:
                with open(file, encoding="utf-8") as fh:
                    value = fh.read().rstrip("\r\n")
            except (OSError, UnicodeDecodeError) as exc:
                missing = f"cannot read {spec['from_file']}: {getattr(exc, 'strerror', None) or exc}"
        if value is None or value == "":
            if required:
                ctx.fail(path, f"secret {name}: {missing}", "or mark it `required: false`", key=True)
            continue
        if "\x00" in value:
            ctx.fail(path, f"secret {name} contains a NUL byte", key=True)
            continue
        ctx.secrets[name] = value
