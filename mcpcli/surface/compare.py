"""Two surfaces compared: every change, each breaking (for clients of the old one) or not.

Breaking: a tool, resource template or prompt removed; a prompt argument removed
or newly required; a capability dropped; a tool that must now run as a task; and
what `schemas` finds breaking in a tool's input or output schema. Not breaking:
additions, descriptions, annotations, and resources (a resource list is data, it
changes as the server's data does). The server's name, version and the protocol
version are information, shown beside the changes but never one of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcpcli.surface.schemas import compare_schemas

__all__ = ["KINDS", "Change", "compare"]

JSON = dict[str, Any]

#: Every kind of change and whether it breaks clients of the old surface (the README's table).
KINDS: dict[str, bool] = {
    "capability-removed": True,
    "capability-added": False,
    "instructions-changed": False,
    "tool-removed": True,
    "tool-added": False,
    "tool-description-changed": False,
    "tool-annotations-changed": False,
    "tool-task-required": True,
    "tool-task-support-changed": False,
    "tool-changed": False,
    "param-removed": True,
    "param-added": False,
    "param-required-added": True,
    "param-now-required": True,
    "param-now-optional": False,
    "param-type-narrowed": True,
    "param-type-widened": False,
    "param-enum-value-removed": True,
    "param-enum-value-added": False,
    "param-constraint-tightened": True,
    "param-constraint-loosened": False,
    "param-variant-removed": True,
    "param-variant-added": False,
    "param-closed": True,
    "param-opened": False,
    "param-schema-changed": True,
    "param-description-changed": False,
    "param-default-changed": False,
    "output-schema-removed": True,
    "output-schema-added": False,
    "output-field-removed": True,
    "output-field-added": False,
    "output-field-now-optional": True,
    "output-field-now-required": False,
    "output-type-widened": True,
    "output-type-narrowed": False,
    "output-enum-value-added": True,
    "output-enum-value-removed": False,
    "output-variant-added": True,
    "output-variant-removed": False,
    "output-constraint-changed": False,
    "output-schema-changed": True,
    "output-description-changed": False,
    "template-removed": True,
    "template-added": False,
    "template-changed": False,
    "resource-removed": False,
    "resource-added": False,
    "resource-changed": False,
    "prompt-removed": True,
    "prompt-added": False,
    "prompt-description-changed": False,
    "prompt-argument-removed": True,
    "prompt-argument-added": False,
    "prompt-required-argument-added": True,
    "prompt-argument-now-required": True,
    "prompt-argument-now-optional": False,
    "prompt-argument-description-changed": False,
}

#: A tool's fields compared on their own; any other difference is `tool-changed`.
_TOOL_OWN = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution")


@dataclass(frozen=True)
class Change:
    """One difference: what kind, to what (`tool echo param message`), and how."""

    kind: str
    subject: str
    detail: str

    @property
    def breaking(self) -> bool:
        return KINDS[self.kind]

    def to_json(self) -> JSON:
        return {"breaking": self.breaking, "kind": self.kind, "subject": self.subject, "detail": self.detail}


def compare(old: JSON, new: JSON) -> list[Change]:
    """Every change from surface `old` to surface `new` (both canonical), in a stable order:
    capabilities, instructions, tools, templates, prompts, resources."""
    changes: list[Change] = []
    _capabilities(old.get("capabilities") or {}, new.get("capabilities") or {}, "", changes)
    if old.get("instructions") != new.get("instructions"):
        changes.append(Change("instructions-changed", "server instructions", _was(old, new, "instructions")))
    _tools(_by(old, "tools", "name"), _by(new, "tools", "name"), changes)
    _templates(_by(old, "resourceTemplates", "uriTemplate"), _by(new, "resourceTemplates", "uriTemplate"), changes)
    _prompts(_by(old, "prompts", "name"), _by(new, "prompts", "name"), changes)
    _resources(_by(old, "resources", "uri"), _by(new, "resources", "uri"), changes)
    return changes


def _by(surface: JSON, key: str, field: str) -> dict[str, JSON]:
    items = surface.get(key)
    found: dict[str, JSON] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(field), str):
            found.setdefault(item[field], item)
    return found


def _capabilities(old: Any, new: Any, path: str, changes: list[Change]) -> None:
    """A capability (or a flag inside one) the old surface declared and the new does not."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return
    for key in sorted(set(old) | set(new)):
        where = f"{path}.{key}" if path else key
        before, after = old.get(key), new.get(key)
        if _declared(before) and not _declared(after):
            changes.append(Change("capability-removed", f"capability {where}", "no longer declared"))
        elif _declared(after) and not _declared(before):
            changes.append(Change("capability-added", f"capability {where}", "now declared"))
        elif isinstance(before, dict) and isinstance(after, dict):
            _capabilities(before, after, where, changes)


def _declared(value: Any) -> bool:
    """Present and not switched off: `{}`, `true` and any other value but `false`/`null`."""
    return value is not None and value is not False


def _tools(old: dict[str, JSON], new: dict[str, JSON], changes: list[Change]) -> None:
    for name in sorted(set(old) | set(new)):
        subject = f"tool {name}"
        if name not in new:
            changes.append(Change("tool-removed", subject, "removed"))
            continue
        if name not in old:
            changes.append(Change("tool-added", subject, "added"))
            continue
        before, after = old[name], new[name]
        changed = [k for k in ("title", "description") if before.get(k) != after.get(k)]
        if changed:
            changes.append(Change("tool-description-changed", subject, " and ".join(changed) + " changed"))
        if _canon(before.get("annotations")) != _canon(after.get("annotations")):
            changes.append(Change("tool-annotations-changed", subject, _annotations(before, after)))
        _task_support(before, after, subject, changes)
        _schemas(before, after, subject, changes)
        others = sorted(k for k in set(before) | set(after)
                        if k not in _TOOL_OWN and _canon(before.get(k)) != _canon(after.get(k)))
        if others:
            changes.append(Change("tool-changed", subject, ", ".join(others) + " changed"))


def _annotations(before: JSON, after: JSON) -> str:
    a = _mapping(before.get("annotations"))
    b = _mapping(after.get("annotations"))
    parts = [f"{k} {_show(a.get(k))} → {_show(b.get(k))}" for k in sorted(set(a) | set(b))
             if _canon(a.get(k)) != _canon(b.get(k))]
    return "; ".join(parts) if parts else "annotations changed"


def _task_support(before: JSON, after: JSON, subject: str, changes: list[Change]) -> None:
    def support(tool: JSON) -> str:
        execution = tool.get("execution")
        value = execution.get("taskSupport") if isinstance(execution, dict) else None
        return value if isinstance(value, str) else "forbidden"

    a, b = support(before), support(after)
    if a == b:
        return
    kind = "tool-task-required" if b == "required" else "tool-task-support-changed"
    changes.append(Change(kind, subject, f"taskSupport {a} → {b}"))


def _schemas(before: JSON, after: JSON, subject: str, changes: list[Change]) -> None:
    def report_for(what: str) -> Any:
        def report(kind: str, path: str, detail: str) -> None:
            where = f"{subject} {what} {path}" if path else f"{subject} {'arguments' if what == 'param' else what}"
            changes.append(Change(kind, where, detail))

        return report

    compare_schemas(before.get("inputSchema"), after.get("inputSchema"), output=False, report=report_for("param"))
    old_output, new_output = before.get("outputSchema"), after.get("outputSchema")
    if old_output is not None and new_output is None:
        changes.append(Change("output-schema-removed", f"{subject} output", "no output schema any more"))
    elif new_output is not None and old_output is None:
        changes.append(Change("output-schema-added", f"{subject} output", "now has an output schema"))
    elif old_output is not None:
        compare_schemas(old_output, new_output, output=True, report=report_for("output"))


def _templates(old: dict[str, JSON], new: dict[str, JSON], changes: list[Change]) -> None:
    for uri in sorted(set(old) | set(new)):
        subject = f"template {uri}"
        if uri not in new:
            changes.append(Change("template-removed", subject, "removed"))
        elif uri not in old:
            changes.append(Change("template-added", subject, "added"))
        else:
            differ = _fields_changed(old[uri], new[uri])
            if differ:
                changes.append(Change("template-changed", subject, differ))


def _resources(old: dict[str, JSON], new: dict[str, JSON], changes: list[Change]) -> None:
    for uri in sorted(set(old) | set(new)):
        subject = f"resource {uri}"
        if uri not in new:
            changes.append(Change("resource-removed", subject, "removed"))
        elif uri not in old:
            changes.append(Change("resource-added", subject, "added"))
        else:
            differ = _fields_changed(old[uri], new[uri])
            if differ:
                changes.append(Change("resource-changed", subject, differ))


def _prompts(old: dict[str, JSON], new: dict[str, JSON], changes: list[Change]) -> None:
    for name in sorted(set(old) | set(new)):
        subject = f"prompt {name}"
        if name not in new:
            changes.append(Change("prompt-removed", subject, "removed"))
            continue
        if name not in old:
            changes.append(Change("prompt-added", subject, "added"))
            continue
        differ = _fields_changed(old[name], new[name], skip=("arguments",))
        if differ:
            changes.append(Change("prompt-description-changed", subject, differ))
        _arguments(_by(old[name], "arguments", "name"), _by(new[name], "arguments", "name"), subject, changes)


def _arguments(old: dict[str, JSON], new: dict[str, JSON], prompt: str, changes: list[Change]) -> None:
    for name in sorted(set(old) | set(new)):
        subject = f"{prompt} argument {name}"
        if name not in new:
            changes.append(Change("prompt-argument-removed", subject, "removed"))
            continue
        if name not in old:
            if new[name].get("required") is True:
                changes.append(Change("prompt-required-argument-added", subject, "new required argument"))
            else:
                changes.append(Change("prompt-argument-added", subject, "new optional argument"))
            continue
        required_before, required_after = old[name].get("required") is True, new[name].get("required") is True
        if required_after and not required_before:
            changes.append(Change("prompt-argument-now-required", subject, "now required"))
        elif required_before and not required_after:
            changes.append(Change("prompt-argument-now-optional", subject, "no longer required"))
        differ = _fields_changed(old[name], new[name], skip=("required",))
        if differ:
            changes.append(Change("prompt-argument-description-changed", subject, differ))


def _fields_changed(a: JSON, b: JSON, skip: tuple[str, ...] = ()) -> str:
    names = sorted(k for k in set(a) | set(b) if k not in skip and _canon(a.get(k)) != _canon(b.get(k)))
    return ", ".join(names) + " changed" if names else ""


def _was(old: JSON, new: JSON, key: str) -> str:
    if old.get(key) is None:
        return "added"
    if new.get(key) is None:
        return "removed"
    return "changed"


def _mapping(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _show(value: Any) -> str:
    return "none" if value is None else json.dumps(value, ensure_ascii=False)
