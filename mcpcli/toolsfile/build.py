"""Build the `ToolsFile` from a structurally valid tools.yaml document, checking its meaning.

`build_config` resolves the secrets, then builds every tool (`build_tools`),
resource (`build_resources`), prompt (`build_prompts`) and upstream server
(`build_servers`), skipping disabled tools and reporting duplicates. It returns
the config together with every problem found; `load.parse_config` raises them
as one `ToolsFileError`. It also runs on a document that already has problems
(YAML, the format's schema), so one run reports them all.
"""

from __future__ import annotations

import os
from pathlib import Path as FsPath

from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.build_prompts import build_prompt
from mcpcli.toolsfile.build_resources import build_resource
from mcpcli.toolsfile.build_servers import build_servers
from mcpcli.toolsfile.build_tools import build_tool
from mcpcli.toolsfile.model import JSON, Prompt, Resource, Tool, ToolsFile
from mcpcli.toolsfile.yamlstrict import Marks, Path, Problem

__all__ = ["build_config"]


def build_config(raw: JSON, marks: Marks, path: str, env: dict[str, str], *, reported: bool = False,
                 bad: set[Path] | None = None) -> tuple[ToolsFile, list[Problem]]:
    """The model of `raw` (read from `path`), and the problems found (empty when it is valid).

    `reported`: problems were found before (the document may not have the checked form);
    `bad` holds the paths of the values they were about (see `BuildContext`). The build
    still checks everything else, so that one run reports every problem in the file.
    """
    ctx = BuildContext(raw, marks, path, env, reported=reported, bad=bad)
    with ctx.entry():
        _secrets(ctx)
    server = raw.get("server")
    server = dict(server) if isinstance(server, dict) else {}
    info = _server_info(ctx, server)
    tools = _tools(ctx)
    resources = _resources(ctx)
    prompts = _prompts(ctx)
    servers = build_servers(ctx)
    config = ToolsFile(
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


def _entries(ctx: BuildContext, section: str) -> list[tuple[Path, JSON]]:
    """The mappings listed under `section`, with their paths (what is not one was reported)."""
    items = ctx.raw.get(section)
    if not isinstance(items, list):
        return []
    return [((section, i), item) for i, item in enumerate(items) if isinstance(item, dict)]


def _first_of_name(ctx: BuildContext, path: Path, item: JSON, seen: dict[str, int], kind: str) -> bool:
    """Whether `item` is the first of its name; a later one is a problem, whether or not
    the first one was valid (so that fixing it does not reveal one more error)."""
    name = item.get("name")
    if not isinstance(name, str):
        return True
    if name in seen:
        ctx.fail((*path, "name"), f"duplicate {kind} name {name!r} (first at line {seen[name]})")
        return False
    seen[name] = ctx.marks.at((*path, "name"))[0]
    return True


def _tools(ctx: BuildContext) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    seen: dict[str, int] = {}
    for path, item in _entries(ctx, "tools"):
        if item.get("enabled") is False or not _first_of_name(ctx, path, item, seen, "tool"):
            continue
        with ctx.entry():
            tool = build_tool(ctx, item, path)
            if tool is not None:
                tools[tool.name] = tool
    return tools


def _resources(ctx: BuildContext) -> list[Resource]:
    resources: list[Resource] = []
    seen_uris: set[str] = set()
    for path, item in _entries(ctx, "resources"):
        res = None
        with ctx.entry():
            res = build_resource(ctx, item, path)
        if res is None:
            continue
        key = res.uri_template if res.kind == "template" else f"{res.kind}:{res.uri}"
        if key in seen_uris:
            ctx.fail(path, f"duplicate resource {key!r}")
            continue
        seen_uris.add(key or "")
        resources.append(res)
    return resources


def _prompts(ctx: BuildContext) -> dict[str, Prompt]:
    prompts: dict[str, Prompt] = {}
    seen: dict[str, int] = {}
    for path, item in _entries(ctx, "prompts"):
        if not _first_of_name(ctx, path, item, seen, "prompt"):
            continue
        with ctx.entry():
            prompt = build_prompt(ctx, item, path)
            if prompt is not None:
                prompts[prompt.name] = prompt
    return prompts


def _secrets(ctx: BuildContext) -> None:
    """Read every declared secret into `ctx.secrets` (a missing optional one is left out)."""
    secrets = ctx.raw.get("secrets")
    for name, spec in (secrets if isinstance(secrets, dict) else {}).items():
        path = ("secrets", name)
        if not isinstance(spec, dict):
            continue  # reported by the format's check
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
