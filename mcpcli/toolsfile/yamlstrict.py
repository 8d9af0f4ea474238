"""A strict YAML reader for tools.yaml: plain data, exact positions, no YAML 1.1 surprises.

PyYAML composes the node tree (which keeps a start mark for every node); we
build the Python values ourselves instead of using its constructors, so that:

* duplicate keys are errors (PyYAML silently keeps the last one);
* plain scalars resolve by the YAML 1.2 core schema only: `true`/`false`,
  `null`/`~`, decimal/`0x`/`0o` integers, floats (finite ones: `.inf`, `.nan` and
  `1e999` have no JSON form, so they are errors). YAML 1.1 traps are errors with
  a suggestion, never silent conversions: `yes`/`no`/`on`/`off` (booleans in
  1.1), `0777` (octal in 1.1), `1:30` (base-60 in 1.1), `1_000`, unquoted dates;
* tags other than the standard scalar/collection ones (`!!python/object`...)
  are refused, merge keys `<<` are refused, and alias expansion is capped
  (a "billion laughs" document fails fast instead of eating memory);
* an unquoted `{{ name }}` (which YAML reads as a nested mapping) gets a
  "quote it" hint.

`read()` returns the data and a `Marks` table mapping each value's path (a tuple
of keys and indexes) to its `line:col`, so later validation can point back into
the file, with the problems of single values (a value it cannot take is None
there, its path in `Document.bad`), so that checking can go on and report every
problem at once; `load()` raises them instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document", "Marks", "Problem", "YamlProblems", "load", "read"]

#: Nodes built before we decide the document is an alias bomb.
MAX_NODES = 200_000
#: `[`/`{` nesting PyYAML may scan: its scanner slows down cubically with flow depth
#: ("[" * 3000 took seconds), and no real tools.yaml nests flow collections this deep.
MAX_FLOW_DEPTH = 100

Path = tuple[Any, ...]


@dataclass(frozen=True)
class Problem:
    """One error, located in a file."""

    file: str
    line: int  # 1-based; 0 when unknown
    col: int  # 1-based; 0 when unknown
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        return self.format("error")

    def format(self, severity: str | None) -> str:
        """`file:line:col: severity: message (hint)`; without a severity for one-line reports."""
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        text = f"{where}: {severity}: {self.message}" if severity else f"{where}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class YamlProblems(Exception):
    """The file could not be read as strict YAML."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(str(problems[0]) if problems else "invalid YAML")
        self.problems = problems


@dataclass
class Marks:
    """Where each value (and each mapping key) starts in the file."""

    file: str
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    #: The raw text of plain (unquoted) scalars, for "quote it" hints.
    plain: dict[Path, str] = field(default_factory=dict)

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The position of `path`, or of its nearest ancestor that has one."""
        table = self.keys if key else self.values
        probe = tuple(path)
        if key and probe in table:
            return table[probe]
        while probe:
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self.values.get((), (1, 1))

    def problem(self, path: Path, message: str, hint: str | None = None, *, key: bool = False) -> Problem:
        line, col = self.at(path, key=key)
        return Problem(self.file, line, col, message, hint)


_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_ALLOWED_EXPLICIT = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    _MAP,
    _SEQ,
}

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT_DEC = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")
# YAML 1.1 readings that a 1.2 reader would not share.
_YAML11_BOOL = re.compile(r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$")
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_UNDERSCORE_NUM = re.compile(r"^[-+]?(?:0x|0b|0o)?[0-9a-fA-F]*_[0-9a-fA-F_]*(?:\.[0-9_]*)?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}.*)?$")
_BINARY = re.compile(r"^[-+]?0b[01_]+$")


def _resolve_plain(text: str) -> tuple[Any, str | None]:
    """Value of a plain scalar by the YAML 1.2 core schema, or an error message."""
    if _NULL.match(text):
        return None, None
    if text in _BOOL:
        return _BOOL[text], None
    if _YAML11_BOOL.match(text):
        lowered = text.lower()
        meaning = "true" if lowered in ("yes", "on") else "false"
        return None, (
            f"unquoted {text!r} is ambiguous (YAML 1.1 reads it as {meaning}): "
            f"write {meaning} for a boolean or '{text}' in quotes for a string"
        )
    if _INT_DEC.match(text):
        return int(text), None
    if _INT_HEX.match(text):
        return int(text, 16), None
    if _INT_OCT.match(text):
        return int(text[2:], 8), None
    if _LEADING_ZERO.match(text):
        return None, (
            f"unquoted {text!r} is ambiguous (YAML 1.1 reads a leading 0 as octal): "
            f"write '{text}' in quotes for a string, 0o{text.lstrip('+-').lstrip('0') or '0'} for octal, "
            f"or drop the leading zero"
        )
    if _SEXAGESIMAL.match(text):
        return None, (
            f"unquoted {text!r} is ambiguous (YAML 1.1 reads it as a base-60 number): "
            f"write '{text}' in quotes"
        )
    if _BINARY.match(text) or (_UNDERSCORE_NUM.match(text) and any(c.isdigit() for c in text)):
        return None, (
            f"unquoted {text!r} is ambiguous (YAML 1.1 reads it as a number): write '{text}' in "
            f"quotes for a string, or the plain number"
        )
    if _FLOAT.match(text):
        value = float(text)
        if math.isinf(value):
            return None, f"{text} is out of range for a JSON number: write a smaller number, or quote it"
        return value, None
    if _INF.match(text) or _NAN.match(text):
        # YAML has them, JSON (every MCP message, every schema) does not.
        return None, f"{text} is not a JSON number: quote it for a string"
    if _DATE.match(text):
        return None, f"unquoted date {text!r}: write '{text}' in quotes (YAML 1.1 reads it as a date)"
    return text, None


def _position(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _looks_like_placeholder(node: Any) -> bool:
    """`{{ x }}` unquoted parses as a mapping whose only key is a mapping."""
    import yaml

    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return False
    key, value = node.value[0]
    return (
        isinstance(key, yaml.MappingNode)
        and isinstance(value, yaml.ScalarNode)
        and value.value in ("", "~", "null")
    )


@dataclass
class Document:
    """A document read strictly: its data, where each value is, and what was wrong in it."""

    value: Any
    marks: Marks
    problems: list[Problem]
    #: Paths of values left out or set to None because of a problem already in `problems`.
    bad: set[Path]


class _Builder:
    def __init__(self, marks: Marks, source: str) -> None:
        self.marks = marks
        self.source = source
        self.problems: list[Problem] = []
        self.bad: set[Path] = set()
        self.count = 0

    def fail(self, node: Any, message: str, hint: str | None = None, path: Path | None = None) -> None:
        line, col = _position(node.start_mark)
        self.problems.append(Problem(self.marks.file, line, col, message, hint))
        if path is not None:
            self.bad.add(path)

    def build(self, node: Any, path: Path) -> Any:
        import yaml

        self.count += 1
        if self.count > MAX_NODES:
            raise _TooBig(node)
        self.marks.values.setdefault(path, _position(node.start_mark))
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if tag not in (_MAP, _SEQ):
            self.fail(node, f"the YAML tag {tag!r} is not allowed here", "only plain data is accepted", path)
            return None
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if _looks_like_placeholder(node):
            self.fail(
                node,
                "an unquoted {{ ... }} is read by YAML as a mapping",
                "quote the whole value, e.g. \"{{ name }}\"",
                path,
            )
            return None
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.fail(key_node, "mapping keys must be plain strings")
                continue
            if key_node.tag == "tag:yaml.org,2002:merge" or (key_node.value == "<<" and key_node.style is None):
                self.fail(key_node, "merge keys (<<) are not supported", "repeat the keys, or use defaults:")
                continue
            before = len(self.problems)
            key = self.scalar(key_node, (*path, key_node.value), is_key=True)
            if len(self.problems) > before:
                continue
            key = key_node.value if key is None else str(key)
            if key in out:
                first = self.marks.keys.get((*path, key))
                where = f" (first at line {first[0]})" if first else ""
                self.fail(key_node, f"duplicate key {key!r}{where}")
                continue
            key_path = (*path, key)
            self.marks.keys[key_path] = _position(key_node.start_mark)
            out[key] = self.build(value_node, (*path, key))
        return out

    def explicit_tag(self, node: Any) -> bool:
        """Whether the scalar carried a tag in the source (`!!str yes`)."""
        start, stop = node.start_mark.index, node.end_mark.index
        head = self.source[start:stop]
        if head.startswith("&"):
            head = head.split(None, 1)[1] if " " in head else ""
        return head.startswith("!")

    def scalar(self, node: Any, path: Path, *, is_key: bool = False) -> Any:
        tag = node.tag
        text = node.value
        explicit = self.explicit_tag(node)
        if explicit and tag not in _ALLOWED_EXPLICIT:
            self.fail(node, f"the YAML tag {tag!r} is not allowed here", "only plain data is accepted", path)
            return None
        if node.style is not None or (explicit and tag == _STR):
            # Quoted, literal/folded block, or `!!str`: always a string.
            if explicit and tag != _STR:
                self.fail(node, f"the YAML tag {tag!r} cannot apply to a quoted value", path=path)
                return None
            return text
        value, error = _resolve_plain(text)
        if error:
            self.fail(node, error, path=path)
            return None
        if explicit:
            wanted: Any = {"tag:yaml.org,2002:int": int, "tag:yaml.org,2002:float": (int, float),
                           "tag:yaml.org,2002:bool": bool, "tag:yaml.org,2002:null": type(None)}.get(tag)
            if wanted is not None and (not isinstance(value, wanted) or
                                       (wanted is int and isinstance(value, bool))):
                self.fail(node, f"{text!r} is not a valid {tag.rsplit(':', 1)[-1]}", path=path)
                return None
        if is_key:
            return text
        self.marks.plain[path] = text
        return value


class _TooBig(Exception):
    def __init__(self, node: Any) -> None:
        super().__init__("too many nodes")
        self.node = node


def _decode(data: bytes, file: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise YamlProblems(
            [Problem(file, line, col, f"the file is not UTF-8 (byte 0x{data[exc.start]:02x})")]
        ) from None


_LOADER: Any = None


def _loader() -> Any:
    """PyYAML's SafeLoader, refusing flow collections nested deeper than MAX_FLOW_DEPTH."""
    global _LOADER
    if _LOADER is None:
        import yaml

        class Loader(yaml.SafeLoader):
            def fetch_flow_collection_start(self, TokenClass: Any) -> None:
                if self.flow_level >= MAX_FLOW_DEPTH:
                    raise yaml.scanner.ScannerError(
                        None, None, f"[ and {{ nested more than {MAX_FLOW_DEPTH} deep", self.get_mark()
                    )
                super().fetch_flow_collection_start(TokenClass)

        _LOADER = Loader
    return _LOADER


def load(data: bytes | str, file: str) -> tuple[Any, Marks]:
    """Parse one YAML document strictly; raise `YamlProblems` listing every error found."""
    document = read(data, file)
    if document.problems:
        raise YamlProblems(document.problems)
    return document.value, document.marks


def read(data: bytes | str, file: str) -> Document:
    """Parse one YAML document strictly, with the problems of its values (`YamlProblems` when
    it cannot be read at all: not UTF-8, not YAML, tabs, empty, several documents, too big)."""
    import yaml

    text = _decode(data, file) if isinstance(data, bytes) else data
    marks = Marks(file)
    if "\t" in text:
        # YAML forbids tabs for indentation; PyYAML's message is cryptic, so say it plainly.
        for lineno, source_line in enumerate(text.splitlines(), 1):
            stripped = source_line.lstrip(" ")
            if stripped.startswith("\t"):
                raise YamlProblems(
                    [Problem(file, lineno, len(source_line) - len(stripped) + 1,
                             "tab character used for indentation", "YAML indents with spaces only")]
                )
    try:
        nodes = list(yaml.compose_all(text, Loader=_loader()))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = _position(mark)
        message = exc.problem or exc.context or "invalid YAML"
        hint = None
        if "{" in text and ("found unhashable key" in str(exc) or "expected ',' or" in message
                            or "expected ',' or ']'" in str(exc) or "expected <block end>" in message):
            hint = "if this line has a {{ ... }} placeholder, quote the whole value"
        raise YamlProblems([Problem(file, line, col, f"invalid YAML: {message}", hint)]) from None
    except yaml.YAMLError as exc:  # pragma: no cover - PyYAML errors are marked
        raise YamlProblems([Problem(file, 0, 0, f"invalid YAML: {exc}")]) from None
    except RecursionError:  # PyYAML composes nested collections recursively: "[[[[..."
        raise YamlProblems([Problem(file, 1, 1, "the document is nested too deeply")]) from None
    if not nodes:
        raise YamlProblems([Problem(file, 1, 1, "the file is empty", "start with `version: 1`")])
    if len(nodes) > 1:
        line, col = _position(nodes[1].start_mark)
        raise YamlProblems([Problem(file, line, col, "only one YAML document per file is allowed")])
    builder = _Builder(marks, text)
    try:
        value = builder.build(nodes[0], ())
    except _TooBig as big:
        line, col = _position(big.node.start_mark)
        raise YamlProblems(
            [Problem(file, line, col, f"the document expands to more than {MAX_NODES} values",
                     "too many aliases (a 'billion laughs' document?)")]
        ) from None
    except RecursionError:
        raise YamlProblems([Problem(file, 1, 1, "the document is nested too deeply")]) from None
    return Document(value, marks, builder.problems, builder.bad)
