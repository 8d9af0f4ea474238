"""The shape of every result, per protocol revision, written from the spec (not its schema files).

Each function looks at one result (or one object inside it) as the server sent
it and records a `Problem` for each field that is missing or of the wrong type in
the negotiated revision. Fields a revision does not know are tolerated (objects
are open), so a newer server is never faulted for extras; what a revision requires
and types is checked. Severities follow `findings`: a required field missing or of
the wrong type is an error; one the spec tells clients to default (2026-07-28's
`resultType`, `ttlMs`, `cacheScope`) is a warning.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpcli.args import json_type
from mcpcli.core.protocol import SERVER_INFO_KEY

__all__ = ["Problem", "Shapes", "at_least", "json_type"]


JSON = dict[str, Any]

#: Content block types a tool result may hold, and the revision that added each.
CONTENT_TYPES = {
    "text": "2024-11-05",
    "image": "2024-11-05",
    "resource": "2024-11-05",
    "audio": "2025-03-26",
    "resource_link": "2025-06-18",
}
TASK_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
#: A URI has a scheme (RFC 3986): what `resources/read` needs to be asked for.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: Results of these methods carry cache hints in 2026-07-28.
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list", "resources/read"})


def at_least(revision: str, since: str) -> bool:
    """Whether `revision` includes what `since` introduced (revisions are dates)."""
    return revision >= since


_KINDS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


@dataclass(frozen=True)
class Problem:
    severity: str
    message: str
    subject: str | None = None


@dataclass
class Shapes:
    """Shape checks against one revision; what they find collects in `problems`."""

    revision: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def modern(self) -> bool:
        return at_least(self.revision, "2026-07-28")

    def problem(self, message: str, subject: str | None = None, severity: str = "error") -> None:
        self.problems.append(Problem(severity, message, subject))

    def field(self, obj: JSON, key: str, kind: str, path: str, *, required: bool = False,
              subject: str | None = None, severity: str = "error") -> Any:
        """`obj[key]` when it has the right kind, else None (and a problem when it is wrong or
        missing but required)."""
        where = f"{path}.{key}" if path else key
        if key not in obj:
            if required:
                self.problem(f"{where} is missing", subject, severity)
            return None
        value = obj[key]
        if not _KINDS[kind](value):
            self.problem(f"{where} is {json_type(value)}, not {kind}", subject, severity)
            return None
        return value

    def strings(self, obj: JSON, key: str, path: str, *, subject: str | None = None,
                required: bool = False) -> list[str] | None:
        items = self.field(obj, key, "array", path, required=required, subject=subject)
        if items is None:
            return None
        for i, item in enumerate(items):
            if not isinstance(item, str):
                self.problem(f"{path}.{key}[{i}] is {json_type(item)}, not string", subject)
        return [item for item in items if isinstance(item, str)]

    # -- the result envelope --------------------------------------------------------------

    def result(self, result: Any, method: str) -> JSON | None:
        """A result is an object; in 2026-07-28 it says `resultType`, and cacheable ones
        carry their cache hints. None when it is no object at all."""
        if not isinstance(result, dict):
            self.problem(f"{method}: the result is {json_type(result)}, not an object")
            return None
        if self.modern:
            kind = result.get("resultType")
            if kind is None:
                self.problem(f"{method}: the result has no resultType (2026-07-28 requires it; clients "
                             "read its absence as \"complete\")", severity="warning")
            elif kind != "complete":
                self.problem(f"{method}: resultType is {kind!r}; this request can only complete")
            if method in CACHEABLE:
                self.cache_hints(result, method)
        meta = result.get("_meta")
        if meta is not None and not isinstance(meta, dict):
            self.problem(f"{method}: _meta is {json_type(meta)}, not object")
        return result

    def cache_hints(self, result: JSON, method: str) -> None:
        """2026-07-28 caching: `ttlMs` (integer >= 0) and `cacheScope` ("public" or "private").
        The spec tells clients what to do when they are absent, so that is a warning."""
        if "ttlMs" not in result:
            self.problem(f"{method}: the result has no ttlMs (servers must give cache hints; clients "
                         "take it as 0)", severity="warning")
        else:
            ttl = result["ttlMs"]
            if not _KINDS["integer"](ttl):
                self.problem(f"{method}: ttlMs is {json_type(ttl)}, not integer")
            elif ttl < 0:
                self.problem(f"{method}: ttlMs is negative ({ttl}); clients treat it as 0", severity="warning")
        if "cacheScope" not in result:
            self.problem(f"{method}: the result has no cacheScope (servers must give cache hints)",
                         severity="warning")
        elif result["cacheScope"] not in ("public", "private"):
            self.problem(f"{method}: cacheScope is {result['cacheScope']!r}, not \"public\" or \"private\"")

    # -- handshakes ---------------------------------------------------------------------

    def implementation(self, info: Any, path: str) -> None:
        if not isinstance(info, dict):
            self.problem(f"{path} is {json_type(info)}, not object")
            return
        self.field(info, "name", "string", path, required=True)
        self.field(info, "version", "string", path, required=True)
        for key in ("title", "description", "websiteUrl"):
            self.field(info, key, "string", path)
        self.icons(info, path, None)

    def capabilities(self, caps: JSON, path: str) -> None:
        for key in ("tools", "resources", "prompts", "logging", "completions", "experimental", "tasks",
                    "extensions"):
            value = self.field(caps, key, "object", path)
            if value is None:
                continue
            for flag in ("listChanged", "subscribe"):
                self.field(value, flag, "boolean", f"{path}.{key}")

    def initialize_result(self, result: Any) -> None:
        obj = self.result(result, "initialize")
        if obj is None:
            return
        self.field(obj, "protocolVersion", "string", "initialize", required=True)
        caps = self.field(obj, "capabilities", "object", "initialize", required=True)
        if caps is not None:
            self.capabilities(caps, "initialize.capabilities")
        if "serverInfo" not in obj:
            self.problem("initialize.serverInfo is missing")
        else:
            self.implementation(obj["serverInfo"], "initialize.serverInfo")
        self.field(obj, "instructions", "string", "initialize")

    def discover_result(self, result: Any) -> None:
        obj = self.result(result, "server/discover")
        if obj is None:
            return
        versions = self.strings(obj, "supportedVersions", "server/discover", required=True)
        if versions is not None and not versions:
            self.problem("server/discover.supportedVersions is empty")
        caps = self.field(obj, "capabilities", "object", "server/discover", required=True)
        if caps is not None:
            self.capabilities(caps, "server/discover.capabilities")
        self.field(obj, "instructions", "string", "server/discover")
        meta = obj.get("_meta")
        info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if info is None:
            self.problem(f"server/discover: _meta has no {SERVER_INFO_KEY} (servers should say who they "
                         "are; clients show no name)", severity="warning")
        else:
            self.implementation(info, f"server/discover._meta[{SERVER_INFO_KEY}]")

    # -- lists --------------------------------------------------------------------------

    def page(self, result: Any, method: str, key: str) -> list[Any] | None:
        """One page of a list: its items (each checked by `item` later) or None."""
        obj = self.result(result, method)
        if obj is None:
            return None
        items = self.field(obj, key, "array", method, required=True)
        self.field(obj, "nextCursor", "string", method)
        return items if isinstance(items, list) else None

    def icons(self, obj: JSON, path: str, subject: str | None) -> None:
        icons = self.field(obj, "icons", "array", path, subject=subject)
        for i, icon in enumerate(icons or []):
            where = f"{path}.icons[{i}]"
            if not isinstance(icon, dict):
                self.problem(f"{where} is {json_type(icon)}, not object", subject)
                continue
            self.field(icon, "src", "string", where, required=True, subject=subject)
            self.field(icon, "mimeType", "string", where, subject=subject)
            if "theme" in icon and icon["theme"] not in ("light", "dark"):
                self.problem(f"{where}.theme is {icon['theme']!r}, not \"light\" or \"dark\"", subject)

    def annotations(self, obj: JSON, path: str, subject: str | None) -> None:
        """Content and resource annotations: audience and priority."""
        ann = self.field(obj, "annotations", "object", path, subject=subject)
        if ann is None:
            return
        audience = self.field(ann, "audience", "array", f"{path}.annotations", subject=subject)
        for role in audience or []:
            if role not in ("user", "assistant"):
                self.problem(f"{path}.annotations.audience holds {role!r}, not \"user\" or \"assistant\"", subject)
        priority = self.field(ann, "priority", "number", f"{path}.annotations", subject=subject)
        if priority is not None and not 0 <= priority <= 1:
            self.problem(f"{path}.annotations.priority is {priority}, outside 0..1", subject)

    def tool(self, tool: Any, path: str) -> str | None:
        """One tool of `tools/list`; its name when it has one."""
        if not isinstance(tool, dict):
            self.problem(f"{path} is {json_type(tool)}, not object")
            return None
        name = self.field(tool, "name", "string", path, required=True)
        subject = name
        for key in ("title", "description"):
            self.field(tool, key, "string", path, subject=subject)
        self.field(tool, "inputSchema", "object", path, required=True, subject=subject)
        self.field(tool, "outputSchema", "object", path, subject=subject)
        hints = self.field(tool, "annotations", "object", path, subject=subject)
        if hints is not None:
            self.field(hints, "title", "string", f"{path}.annotations", subject=subject)
            for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                self.field(hints, hint, "boolean", f"{path}.annotations", subject=subject)
        execution = self.field(tool, "execution", "object", path, subject=subject)
        if execution is not None and at_least(self.revision, "2025-11-25") and not self.modern:
            support = execution.get("taskSupport")
            if support is not None and support not in ("forbidden", "optional", "required"):
                self.problem(f"{path}.execution.taskSupport is {support!r}", subject)
        self.icons(tool, path, subject)
        return name if isinstance(name, str) else None

    def resource(self, res: Any, path: str, *, template: bool = False) -> str | None:
        """One resource (or template); its URI (template) when it has one."""
        if not isinstance(res, dict):
            self.problem(f"{path} is {json_type(res)}, not object")
            return None
        key = "uriTemplate" if template else "uri"
        uri = self.field(res, key, "string", path, required=True)
        subject = uri
        if uri is not None and not _SCHEME.match(uri):
            self.problem(f"{path}.{key} {uri!r} is not an absolute URI (no scheme)", subject)
        self.field(res, "name", "string", path, required=True, subject=subject)
        for key in ("title", "description", "mimeType"):
            self.field(res, key, "string", path, subject=subject)
        if not template:
            self.field(res, "size", "integer", path, subject=subject)
        self.annotations(res, path, subject)
        self.icons(res, path, subject)
        return uri if isinstance(uri, str) else None

    def prompt(self, prompt: Any, path: str) -> str | None:
        if not isinstance(prompt, dict):
            self.problem(f"{path} is {json_type(prompt)}, not object")
            return None
        name = self.field(prompt, "name", "string", path, required=True)
        for key in ("title", "description"):
            self.field(prompt, key, "string", path, subject=name)
        arguments = self.field(prompt, "arguments", "array", path, subject=name)
        for i, arg in enumerate(arguments or []):
            where = f"{path}.arguments[{i}]"
            if not isinstance(arg, dict):
                self.problem(f"{where} is {json_type(arg)}, not object", name)
                continue
            self.field(arg, "name", "string", where, required=True, subject=name)
            self.field(arg, "description", "string", where, subject=name)
            self.field(arg, "required", "boolean", where, subject=name)
        self.icons(prompt, path, name)
        return name if isinstance(name, str) else None

    def task(self, task: Any, path: str) -> None:
        """A task of 2025-11-25's `tasks/list`."""
        if not isinstance(task, dict):
            self.problem(f"{path} is {json_type(task)}, not object")
            return
        task_id = self.field(task, "taskId", "string", path, required=True)
        status = self.field(task, "status", "string", path, required=True, subject=task_id)
        if status is not None and status not in TASK_STATUSES:
            self.problem(f"{path}.status is {status!r}", task_id)
        for key in ("createdAt", "lastUpdatedAt"):
            self.field(task, key, "string", path, required=True, subject=task_id)
        if "ttl" not in task:
            self.problem(f"{path}.ttl is missing", task_id)
        elif task["ttl"] is not None and not _KINDS["integer"](task["ttl"]):
            self.problem(f"{path}.ttl is {json_type(task['ttl'])}, not integer or null", task_id)

    # -- other results --------------------------------------------------------------------

    def call_result(self, result: Any, subject: str) -> JSON | None:
        """A `tools/call` result (structuredContent against the outputSchema is `calls`' job)."""
        obj = self.result(result, f"tools/call {subject}")
        if obj is None:
            return None
        content = self.field(obj, "content", "array", "result", required=True, subject=subject)
        for i, block in enumerate(content or []):
            self.content_block(block, f"result.content[{i}]", subject)
        self.field(obj, "isError", "boolean", "result", subject=subject)
        if "structuredContent" in obj and at_least(self.revision, "2025-06-18") and not self.modern:
            self.field(obj, "structuredContent", "object", "result", subject=subject)
        return obj

    def content_block(self, block: Any, path: str, subject: str | None) -> None:
        if not isinstance(block, dict):
            self.problem(f"{path} is {json_type(block)}, not object", subject)
            return
        kind = self.field(block, "type", "string", path, required=True, subject=subject)
        if kind is None:
            return
        since = CONTENT_TYPES.get(kind)
        if since is None or not at_least(self.revision, since):
            known = ", ".join(k for k, s in CONTENT_TYPES.items() if at_least(self.revision, s))
            self.problem(f"{path}.type is {kind!r}, which {self.revision} does not have ({known})", subject)
            return
        if kind == "text":
            self.field(block, "text", "string", path, required=True, subject=subject)
        elif kind in ("image", "audio"):
            data = self.field(block, "data", "string", path, required=True, subject=subject)
            self.field(block, "mimeType", "string", path, required=True, subject=subject)
            if data is not None and not _base64(data):
                self.problem(f"{path}.data is not base64", subject)
        elif kind == "resource_link":
            self.field(block, "uri", "string", path, required=True, subject=subject)
            self.field(block, "name", "string", path, required=True, subject=subject)
        else:
            inner = self.field(block, "resource", "object", path, required=True, subject=subject)
            if inner is not None:
                self.resource_contents(inner, f"{path}.resource", subject)
        self.annotations(block, path, subject)

    def resource_contents(self, contents: JSON, path: str, subject: str | None) -> None:
        self.field(contents, "uri", "string", path, required=True, subject=subject)
        self.field(contents, "mimeType", "string", path, subject=subject)
        if "text" in contents:
            self.field(contents, "text", "string", path, subject=subject)
        elif "blob" in contents:
            blob = self.field(contents, "blob", "string", path, subject=subject)
            if blob is not None and not _base64(blob):
                self.problem(f"{path}.blob is not base64", subject)
        else:
            self.problem(f"{path} has neither text nor blob", subject)

    def complete_result(self, result: Any) -> None:
        obj = self.result(result, "completion/complete")
        if obj is None:
            return
        completion = self.field(obj, "completion", "object", "completion/complete", required=True)
        if completion is None:
            return
        values = self.strings(completion, "values", "completion/complete.completion", required=True)
        if values is not None and len(values) > 100:
            self.problem(f"completion/complete.completion.values has {len(values)} items (at most 100)")
        self.field(completion, "total", "integer", "completion/complete.completion")
        self.field(completion, "hasMore", "boolean", "completion/complete.completion")


def _base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True
