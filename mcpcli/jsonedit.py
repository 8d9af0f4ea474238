"""Minimal text edits of a JSON (or JSON-with-comments) document.

Other clients' config files are the user's: a full parse-and-dump would drop
their comments, reorder nothing but still reformat every line. Here a document
is parsed only to find where things are (spans), and an edit inserts, replaces
or deletes the text of one object member, so every other byte stays as it was.
Inserting a member and then removing it gives back the original text.

Comments (`//`, `/* */`) and trailing commas are accepted everywhere, as VS Code
and Zed write them; a BOM is kept. The standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsonEditError", "Member", "Node", "parse", "remove_member", "set_member"]

_WS = " \t\r\n"
_DELIMS = _WS + ",]}/:"
#: Deeper nesting is refused (the parser recurses; a config file is never near this).
MAX_DEPTH = 256


class JsonEditError(ValueError):
    """The text is not JSON (with comments) that can be edited safely."""


@dataclass
class Member:
    key: str
    key_start: int
    value: Node


@dataclass
class Node:
    """A value's span; objects keep their members (in order), arrays only their span."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    members: list[Member] = field(default_factory=list)
    value: Any = None

    def get(self, key: str) -> Member | None:
        found = None
        for member in self.members:
            if member.key == key:
                found = member  # the last one wins, as in json.loads
        return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    def fail(self, message: str) -> JsonEditError:
        line = self.text.count("\n", 0, self.i) + 1
        column = self.i - (self.text.rfind("\n", 0, self.i) + 1) + 1
        return JsonEditError(f"{message} at line {line} column {column}")

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.i < n:
            ch = text[self.i]
            if ch in _WS:
                self.i += 1
            elif text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.i >= len(self.text):
            raise self.fail("unexpected end of text")
        ch = self.text[self.i]
        if ch in "{[":
            if self.depth >= MAX_DEPTH:
                raise self.fail(f"nested more than {MAX_DEPTH} deep")
            self.depth += 1
            node = self.obj() if ch == "{" else self.array()
            self.depth -= 1
            return node
        if ch == '"':
            start = self.i
            value = self.string()
            return Node("scalar", start, self.i, value=value)
        return self.scalar()

    def string(self) -> str:
        try:
            value, end = json.decoder.scanstring(self.text, self.i + 1, True)  # type: ignore[attr-defined]
        except ValueError as exc:
            raise self.fail(f"bad string ({exc})") from None
        self.i = end
        return str(value)

    def scalar(self) -> Node:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in _DELIMS:
            self.i += 1
        token = self.text[start:self.i]
        try:
            value = json.loads(token)
        except ValueError:
            self.i = start
            raise self.fail(f"unexpected {token[:20] or self.text[start]!r}") from None
        return Node("scalar", start, self.i, value=value)

    def obj(self) -> Node:
        node = Node("object", self.i, self.i)
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.text):
                raise self.fail("unterminated object")
            if self.text[self.i] == "}":
                self.i += 1
                node.end = self.i
                return node
            if self.text[self.i] != '"':
                raise self.fail("expected a quoted key")
            key_start = self.i
            key = self.string()
            self.skip()
            if self.i >= len(self.text) or self.text[self.i] != ":":
                raise self.fail("expected ':'")
            self.i += 1
            node.members.append(Member(key, key_start, self.value()))
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == ",":
                self.i += 1
            elif self.i < len(self.text) and self.text[self.i] != "}":
                raise self.fail("expected ',' or '}'")

    def array(self) -> Node:
        node = Node("array", self.i, self.i)
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.text):
                raise self.fail("unterminated array")
            if self.text[self.i] == "]":
                self.i += 1
                node.end = self.i
                return node
            self.value()
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == ",":
                self.i += 1
            elif self.i < len(self.text) and self.text[self.i] != "]":
                raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The document's top-level value, with spans; raises `JsonEditError`."""
    parser = _Parser(text)
    if text.startswith("\ufeff"):
        parser.i = 1
    root = parser.value()
    parser.skip()
    if parser.i != len(text):
        raise parser.fail("unexpected text after the document")
    return root


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _indent_unit(text: str) -> str:
    """The file's indentation step: a tab, or the first indented line's spaces."""
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else " " * min(len(lead), 8)
    return "  "


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _starts_line(text: str, pos: int) -> bool:
    return text[_line_start(text, pos):pos].strip(" \t") == ""


def _render(value: Any, indent: str, unit: str, nl: str) -> str:
    """`value` as pretty JSON whose continuation lines start at `indent`."""
    lines = json.dumps(value, indent=unit, ensure_ascii=False).split("\n")
    return (nl + indent).join(lines)


def _after_value(text: str, pos: int) -> tuple[int, bool]:
    """(position after an optional comma that follows `pos` on the same line, had comma)."""
    j = pos
    while j < len(text) and text[j] in " \t":
        j += 1
    if j < len(text) and text[j] == ",":
        return j + 1, True
    return pos, False


def _rest_of_line_is_comment(text: str, pos: int) -> int | None:
    """Where the line ends if only spaces and comments follow `pos` on it, else None."""
    j = pos
    while j < len(text):
        ch = text[j]
        if ch in " \t":
            j += 1
        elif ch == "\n" or text.startswith("\r\n", j):
            return j
        elif text.startswith("//", j):
            end = text.find("\n", j)
            if end < 0:
                return None
            return end - 1 if text[end - 1] == "\r" else end
        elif text.startswith("/*", j):
            end = text.find("*/", j + 2)
            if end < 0 or "\n" in text[j:end]:
                return None
            j = end + 2
        else:
            return None
    return None


def _insert(text: str, obj: Node, key: str, value: Any) -> str:
    """Add `"key": value` as the last member of `obj`."""
    nl, unit = _newline(text), _indent_unit(text)
    key_text = json.dumps(key, ensure_ascii=False)
    if not obj.members:
        inner = text[obj.start + 1:obj.end - 1]
        if inner.strip(_WS):  # only comments inside: put the member after them
            indent = _line_indent(text, obj.start) + unit
            member = f"{key_text}: {_render(value, indent, unit, nl)}"
            close = obj.end - 1
            before = text[:close].rstrip(" \t")
            prefix = "" if before.endswith("\n") else nl
            return before + prefix + indent + member + nl + _line_indent(text, obj.start) + text[close:]
        outer = _line_indent(text, obj.start)
        indent = outer + unit
        member = f"{key_text}: {_render(value, indent, unit, nl)}"
        return text[:obj.start + 1] + nl + indent + member + nl + outer + text[obj.end - 1:]
    last = obj.members[-1]
    if not _starts_line(text, last.key_start):
        # A one-line object: stay on its line.
        member = f"{key_text}: {json.dumps(value, ensure_ascii=False)}"
        after, had_comma = _after_value(text, last.value.end)
        if had_comma:
            return text[:after] + " " + member + "," + text[after:]
        return text[:last.value.end] + ", " + member + text[last.value.end:]
    indent = _line_indent(text, last.key_start)
    member = f"{key_text}: {_render(value, indent, unit, nl)}"
    after, had_comma = _after_value(text, last.value.end)
    line_end = _rest_of_line_is_comment(text, after)
    if line_end is None or line_end >= obj.end - 1:
        line_end = after
    addition = nl + indent + member + ("," if had_comma else "")
    if had_comma:
        return text[:line_end] + addition + text[line_end:]
    return text[:last.value.end] + "," + text[last.value.end:line_end] + addition + text[line_end:]


def _find(root: Node, path: list[str]) -> tuple[Node, list[str]]:
    """The deepest existing object along `path`, and the keys still missing below it."""
    node = root
    for depth, key in enumerate(path):
        member = node.get(key)
        if member is None:
            return node, path[depth:]
        if member.value.kind != "object":
            raise JsonEditError(f"{'.'.join(path[:depth + 1])} is not an object")
        node = member.value
    return node, []


def set_member(text: str, path: list[str], key: str, value: Any) -> tuple[str, bool]:
    """`text` with `path...[key] = value` (containers created as needed); (new text, replaced)."""
    if not text.strip(_WS + "\ufeff"):
        nested: Any = {key: value}
        for name in reversed(path):
            nested = {name: nested}
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        return bom + json.dumps(nested, indent=2, ensure_ascii=False) + "\n", False
    root = parse(text)
    if root.kind != "object":
        raise JsonEditError("the top level is not an object")
    container, missing = _find(root, path)
    if missing:
        nested = {key: value}
        for name in reversed(missing[1:]):
            nested = {name: nested}
        return _insert(text, container, missing[0], nested), False
    existing = container.get(key)
    if existing is None:
        return _insert(text, container, key, value), False
    nl, unit = _newline(text), _indent_unit(text)
    indent = _line_indent(text, existing.key_start)
    rendered = _render(value, indent, unit, nl)
    return text[:existing.value.start] + rendered + text[existing.value.end:], True


def remove_member(text: str, path: list[str], key: str) -> str | None:
    """`text` without `path...[key]`, or None when there is no such member."""
    if not text.strip(_WS + "\ufeff"):
        return None
    root = parse(text)
    if root.kind != "object":
        raise JsonEditError("the top level is not an object")
    container, missing = _find(root, path)
    if missing:
        return None
    member = container.get(key)
    if member is None:
        return None
    index = container.members.index(member)
    after, had_comma = _after_value(text, member.value.end)
    if len(container.members) == 1:
        inner_without = text[container.start + 1:member.key_start] + text[after:container.end - 1]
        if not inner_without.strip(_WS):
            return text[:container.start + 1] + text[container.end - 1:]
    is_last = index == len(container.members) - 1
    line_end = _rest_of_line_is_comment(text, after)
    if _starts_line(text, member.key_start) and line_end is not None and index > 0:
        # Its own line(s): drop them with the line break before them.
        start = _line_start(text, member.key_start) - 1
        if start > 0 and text[start - 1] == "\r":
            start -= 1
        out = text[:start] + text[line_end:]
        if is_last and not had_comma:
            prev = container.members[index - 1]
            comma, prev_comma = _after_value(out, prev.value.end)
            if prev_comma:
                out = out[:comma - 1] + out[comma:]
        return out
    if is_last and index > 0 and not had_comma:
        prev = container.members[index - 1]
        return text[:prev.value.end] + text[member.value.end:]
    end = after
    while end < len(text) and text[end] in " \t":
        end += 1
    if _starts_line(text, member.key_start) and line_end is not None:
        start = _line_start(text, member.key_start)
        nl_end = line_end + (2 if text.startswith("\r\n", line_end) else 1)
        return text[:start] + text[nl_end:]
    return text[:member.key_start] + text[end:]
