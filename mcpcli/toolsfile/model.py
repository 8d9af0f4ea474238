"""The tools.yaml model: the immutable `ToolsFile` snapshot and what it is made of.

`load.load_config` reads a tools.yaml file into a `ToolsFile`: strict YAML,
`${VAR}` interpolation, structural validation against `tools.schema.json`
(`structure`), then the `build*` modules check the meaning and build these
objects. This module holds the dataclasses, the format's defaults and the small
value parsers they share.

A `ToolsFile` is never mutated: a reload builds a new one and swaps it, and a call
keeps using the snapshot it started with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcpcli.server.backend import TaskPolicy
from mcpcli.toolsfile.templating import Template
from mcpcli.toolsfile.yamlstrict import Problem

__all__ = [
    "DEFAULT_INHERIT_ENV",
    "MISSING",
    "Param",
    "Prompt",
    "Resource",
    "RunSpec",
    "Tool",
    "ToolFilter",
    "ToolsFile",
    "Upstream",
    "format_size",
    "parse_duration",
    "parse_size",
    "schema_text",
]

JSON = dict[str, Any]

DEFAULT_INHERIT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME")
DEFAULT_TIMEOUT = 30.0
DEFAULT_KILL_GRACE = 2.0
DEFAULT_MAX_TIMEOUT = 600.0
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_CONCURRENT = 16
DEFAULT_QUEUE_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_TASK_AFTER = {"optional": 1.0, "required": 0.0}
DEFAULT_TASK_TTL = 3600.0
DEFAULT_TASK_POLL = 1.0

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$")
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB)?$")
_SIZE_UNITS = {None: 1, "B": 1, "KB": 1000, "KiB": 1024, "MB": 1000**2, "MiB": 1024**2,
               "GB": 1000**3, "GiB": 1024**3}
_MISSING: Any = object()
MISSING = _MISSING


# -- small parsers ---------------------------------------------------------------------


def parse_duration(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"bad duration {value!r}")
    number, unit = float(match.group(1)), match.group(2)
    return number * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]


def parse_size(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(str(value).strip())
    if not match:
        raise ValueError(f"bad size {value!r}")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def format_size(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value % 1 else f"{int(value)}{unit}"
    return f"{n}B"


def schema_text() -> str:
    """The JSON Schema of the tools.yaml format (what `mcp serve --print-schema` prints)."""
    from importlib.resources import files

    return (files("mcpcli.toolsfile") / "tools.schema.json").read_text(encoding="utf-8")


# -- the model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One declared parameter (of a tool, or of a resource template)."""

    name: str
    type: str
    required: bool
    default: Any  # _MISSING when there is none
    schema: JSON  # the published JSON Schema of the value
    within: tuple[str, ...] = ()  # realpaths, for type path
    must_exist: bool = False
    kind: str = "any"
    allow_leading_dash: bool = False
    item: Param | None = None
    complete: Any = None  # list of values or a RunSpec

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    @property
    def env_name(self) -> str:
        return "MCP_ARG_" + self.name.upper()


@dataclass(frozen=True)
class Lit:
    template: Template


@dataclass(frozen=True)
class Splat:
    name: str


@dataclass(frozen=True)
class When:
    name: str
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Each:
    name: str
    items: tuple[Any, ...]


@dataclass(frozen=True)
class SecretRef:
    name: str


@dataclass(frozen=True)
class RunSpec:
    """How to start one process."""

    where: str  # "tool 'x'", for messages
    argv: tuple[Any, ...] | None  # Lit / Splat / When / Each
    shell: str | None
    args: tuple[Any, ...]  # with script: "$1"...
    script: str | None
    stdin: str  # "none", "json" or "param"
    stdin_param: str | None
    env: tuple[tuple[str, Any], ...]  # (NAME, Template | SecretRef)
    inherit_env: tuple[str, ...]
    cwd: str
    timeout: float
    kill_grace: float
    ok_exit_codes: frozenset[int]
    concurrency: int

    @property
    def uses_output_dir(self) -> bool:
        def refs(items: tuple[Any, ...]) -> bool:
            for item in items:
                if isinstance(item, Lit) and "mcp.output_dir" in item.template.names:
                    return True
                if isinstance(item, (When, Each)) and refs(item.items):
                    return True
            return False

        if self.argv is not None and refs(self.argv):
            return True
        if refs(self.args):
            return True
        return any(isinstance(v, Template) and "mcp.output_dir" in v.names for _, v in self.env)


@dataclass(frozen=True)
class FileSpec:
    glob: str
    mime_type: str | None
    as_: str
    max_bytes: int


@dataclass(frozen=True)
class OutputSpec:
    format: str = "text"
    mime_type: str | None = None
    schema: JSON | None = None
    stderr: str = "on_error"
    max_bytes: int = DEFAULT_MAX_BYTES
    on_overflow: str = "truncate"
    files: tuple[FileSpec, ...] = ()


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: dict[str, Param]
    run: RunSpec | None
    mock: JSON | None
    output: OutputSpec
    title: str | None = None
    annotations: JSON | None = None
    icons: list[JSON] | None = None
    meta: JSON | None = None
    requires: tuple[str, ...] = ()
    #: A complete inputSchema given by the author instead of params.
    raw_input_schema: JSON | None = None
    #: How calls may run as tasks (`task:`); None: never.
    task: TaskPolicy | None = None

    @cached_property
    def input_schema(self) -> JSON:
        if self.raw_input_schema is not None:
            return self.raw_input_schema
        return object_schema(self.params)

    @cached_property
    def output_schema(self) -> JSON | None:
        if self.output.format == "json" and self.output.schema is not None:
            return self.output.schema
        return None

    def listing(self) -> JSON:
        entry: JSON = {"name": self.name}
        if self.title:
            entry["title"] = self.title
        entry["description"] = self.description
        entry["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        if self.task is not None:
            entry["execution"] = {"taskSupport": self.task.support}
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        if self.icons:
            entry["icons"] = list(self.icons)
        if self.meta:
            entry["_meta"] = dict(self.meta)
        return entry


def object_schema(params: dict[str, Param]) -> JSON:
    schema: JSON = {"type": "object", "properties": {n: p.schema for n, p in params.items()}}
    required = [n for n, p in params.items() if p.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


@dataclass(frozen=True)
class Resource:
    """A resource, a directory of resources, or a resource template."""

    kind: str  # "static", "directory" or "template"
    name: str
    uri: str | None  # static: the URI; directory: the prefix
    uri_template: str | None
    source: str  # "file", "text", "command", "directory"
    file: Template | None = None
    directory: str | None = None
    glob: str = "*"
    text: Template | None = None
    command: RunSpec | None = None
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: JSON | None = None
    icons: list[JSON] | None = None
    params: dict[str, Param] = field(default_factory=dict)
    matcher: re.Pattern[str] | None = None
    #: For file templates: the directory the resolved file must stay inside.
    file_root: str | None = None
    subscribe: bool = False

    def listing(self) -> JSON:
        entry: JSON = {}
        if self.kind == "template":
            entry["uriTemplate"] = self.uri_template
        else:
            entry["uri"] = self.uri
        entry["name"] = self.name
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        if self.mime_type:
            entry["mimeType"] = self.mime_type
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        if self.icons:
            entry["icons"] = list(self.icons)
        return entry


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str | None
    title: str | None
    required: bool
    default: str | None
    enum: tuple[str, ...] | None
    pattern: re.Pattern[str] | None
    max_length: int | None
    complete: Any = None


@dataclass(frozen=True)
class Message:
    role: str
    kind: str  # "text", "file", "image", "audio", "resource_uri", "resource_inline"
    text: Template | None = None
    path: str | None = None
    mime_type: str | None = None
    uri: Template | None = None


@dataclass(frozen=True)
class Prompt:
    name: str
    arguments: dict[str, PromptArg]
    messages: tuple[Message, ...]
    run: RunSpec | None
    output_format: str = "text"
    max_bytes: int = DEFAULT_MAX_BYTES
    title: str | None = None
    description: str | None = None
    icons: list[JSON] | None = None
    requires: tuple[str, ...] = ()

    def listing(self) -> JSON:
        entry: JSON = {"name": self.name}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        args = []
        for arg in self.arguments.values():
            item: JSON = {"name": arg.name}
            if arg.title:
                item["title"] = arg.title
            if arg.description:
                item["description"] = arg.description
            item["required"] = arg.required
            args.append(item)
        if args:
            entry["arguments"] = args
        if self.icons:
            entry["icons"] = list(self.icons)
        return entry


@dataclass(frozen=True)
class Limits:
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    queue_timeout: float = DEFAULT_QUEUE_TIMEOUT
    max_timeout: float = DEFAULT_MAX_TIMEOUT


@dataclass(frozen=True)
class ToolFilter:
    """Which of an upstream's tools a gateway serves (`servers:` `tools:`, `mcp serve --proxy`).

    Globs (fnmatch, case-insensitive) match the upstream's own tool names, before any
    prefix. Empty `allow`: every tool. `deny` wins over `allow`. `read_only`: only tools
    annotated `readOnlyHint: true`.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    read_only: bool = False


@dataclass(frozen=True)
class Upstream:
    """One MCP server behind the gateway: a `servers:` entry, or `mcp serve --proxy TARGET`.

    Exactly one of `target` (a configured server name, a URL or a tools.yaml path) and
    `command` (argv of a stdio server) is set. `prefix` is prepended to tool and prompt
    names as given (`servers:` defaults it to `NAME_`; `--proxy` to none). `env` and
    `headers` are already `${VAR}`-interpolated; they are given to this upstream only.
    `line`/`col` locate the entry in its file for error messages (0: not from a file).
    """

    name: str
    target: str | None = None
    command: tuple[str, ...] | None = None
    prefix: str = ""
    tools: ToolFilter = field(default_factory=ToolFilter)
    resources: bool = True
    prompts: bool = True
    #: Not in the repr: values may be secrets (`{secret: NAME}`, `${TOKEN}`).
    env: dict[str, str] = field(default_factory=dict, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    #: Per-request timeout (seconds) and the most requests in flight to this upstream.
    timeout: float | None = None
    concurrency: int = DEFAULT_MAX_CONCURRENT
    file: str = ""
    line: int = 0
    col: int = 0
    #: Where the `target:` value is (a nested file's cycle is reported there); 0: not from a file.
    target_line: int = field(default=0, compare=False)
    target_col: int = field(default=0, compare=False)


@dataclass(frozen=True)
class ToolsFile:
    """One loaded tools.yaml: immutable."""

    path: str
    base_dir: str
    server: JSON
    instructions: str | None
    limits: Limits
    secrets: dict[str, str]
    tools: dict[str, Tool]
    resources: tuple[Resource, ...]
    prompts: dict[str, Prompt]
    warnings: tuple[Problem, ...] = ()
    #: Other MCP servers served through this one (`servers:`), in file order.
    servers: tuple[Upstream, ...] = ()

    @property
    def static_resources(self) -> list[Resource]:
        return [r for r in self.resources if r.kind != "template"]

    @property
    def templates(self) -> list[Resource]:
        return [r for r in self.resources if r.kind == "template"]

    @cached_property
    def has_tasks(self) -> bool:
        """Whether some tool may run as a task."""
        return any(tool.task is not None for tool in self.tools.values())

    def secret_values(self) -> list[str]:
        return [v for v in self.secrets.values() if len(v) >= 6]
