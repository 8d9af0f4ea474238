"""`{{ name }}` placeholders: parsing at load time, expansion at call time.

Placeholders are expanded *inside one value*: an argv element stays exactly one
argv element whatever the value contains (spaces, quotes, `;`, `$(...)`,
newlines), and nothing is ever handed to a shell. The only way one placeholder
becomes several elements is an element that is exactly `"{{ array_param }}"`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PLACEHOLDER", "Part", "Template", "parse", "stringify"]

#: `{{ name }}` or `{{ mcp.builtin }}`, with optional spaces.
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\s*\}\}")
_ANY_BRACES = re.compile(r"\{\{.*?\}\}", re.S)


@dataclass(frozen=True)
class Part:
    text: str
    name: str | None = None  # a placeholder when set


@dataclass(frozen=True)
class Template:
    """A string split into literal text and placeholders."""

    source: str
    parts: tuple[Part, ...]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parts if p.name is not None]

    @property
    def is_literal(self) -> bool:
        return all(p.name is None for p in self.parts)

    @property
    def whole(self) -> str | None:
        """The name when the string is exactly one placeholder."""
        if len(self.parts) == 1 and self.parts[0].name is not None:
            return self.parts[0].name
        return None

    @property
    def starts_with_placeholder(self) -> bool:
        return bool(self.parts) and self.parts[0].name is not None

    def render(self, values: Mapping[str, Any]) -> str | None:
        """The expanded text, or None when a referenced value is absent."""
        out = []
        for part in self.parts:
            if part.name is None:
                out.append(part.text)
                continue
            value = values.get(part.name)
            if value is None:
                return None
            out.append(stringify(value))
        return "".join(out)


def parse(text: str, *, strict: bool = True) -> Template:
    """Split `text`; with `strict`, a `{{` that is not a placeholder is an error (ValueError)."""
    parts: list[Part] = []
    pos = 0
    for match in PLACEHOLDER.finditer(text):
        if match.start() > pos:
            parts.append(Part(text[pos : match.start()]))
        parts.append(Part(match.group(0), match.group(1)))
        pos = match.end()
    if pos < len(text):
        parts.append(Part(text[pos:]))
    if strict:
        for part in parts:
            if part.name is None and "{{" in part.text:
                bad = _ANY_BRACES.search(part.text)
                shown = bad.group(0) if bad else "{{"
                raise ValueError(
                    f"{shown!r} is not a placeholder: write {{{{ name }}}} with a parameter name "
                    "(no filters or expressions)"
                )
    return Template(text, tuple(parts))


def stringify(value: Any) -> str:
    """How a JSON value becomes argv or environment text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
