"""What every step of building the model shares: the document and its problems.

A `BuildContext` holds the interpolated, structurally valid document, its YAML
marks (for `file:line:col`), the environment, the defaults and limits, and the
problems (errors) and warnings found so far. The `build_*` modules take it as
their first argument; a step that finds an error records it with `fail()` and
goes on, so that every problem in the file is reported at once.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any

from mcpcli.errors import ValidationError
from mcpcli.serve import templating
from mcpcli.serve.model import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_TIMEOUT,
    DEFAULT_QUEUE_TIMEOUT,
    JSON,
    Limits,
    parse_duration,
    parse_size,
)
from mcpcli.serve.structure import describe_path
from mcpcli.serve.templating import Template
from mcpcli.serve.yamlstrict import Marks, Path, Problem

__all__ = ["PARAM_NAME", "BuildContext"]

#: A parameter or prompt argument name (it also becomes MCP_ARG_<NAME>).
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class BuildContext:
    def __init__(self, raw: JSON, marks: Marks, path: str, env: dict[str, str]) -> None:
        self.raw = raw
        self.marks = marks
        self.file = path
        self.env = env
        self.base_dir = os.path.dirname(os.path.abspath(path))
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.secrets: dict[str, str] = {}
        defaults = raw.get("defaults") or {}
        self.defaults = defaults
        limits = raw.get("limits") or {}
        self.limits = Limits(
            max_concurrent=limits.get("max_concurrent", DEFAULT_MAX_CONCURRENT),
            queue_timeout=self.duration(limits, "queue_timeout", ("limits",), DEFAULT_QUEUE_TIMEOUT),
            max_timeout=self.duration(limits, "max_timeout", ("limits",), DEFAULT_MAX_TIMEOUT),
        )

    def fail(self, path: Path, message: str, hint: str | None = None, *, key: bool = False) -> None:
        where = describe_path(path, self.raw)
        self.problems.append(self.marks.problem(path, f"{where}: {message}", hint, key=key))

    def warn(self, path: Path, message: str, hint: str | None = None) -> None:
        where = describe_path(path, self.raw)
        line, col = self.marks.at(path)
        self.warnings.append(Problem(self.file, line, col, f"{where}: {message}", hint))

    def duration(self, section: JSON, key: str, path: Path, default: float) -> float:
        if key not in section:
            return default
        try:
            return parse_duration(section[key])
        except ValueError:
            self.fail((*path, key), "bad duration")
            return default

    def size(self, section: JSON, key: str, path: Path, default: int) -> int:
        if key not in section:
            return default
        try:
            return parse_size(section[key])
        except ValueError:
            self.fail((*path, key), "bad size")
            return default

    def resolve_dir(self, text: str) -> str:
        return os.path.normpath(os.path.join(self.base_dir, os.path.expanduser(text)))

    def schema(self, schema: JSON, path: Path, what: str) -> Any | None:
        """A validator for `schema` (`what` names it); None, and a problem at `path`, if it is invalid."""
        from mcpcli.validation import compile_schema

        for rel, ref in _outside_refs(schema):
            # A reference out of the schema is never fetched (validation resolves
            # inside the schema only), so every call would fail: refuse it here.
            where = (*path, *rel)
            if where not in self.marks.values and (*path, "schema", *rel) in self.marks.values:
                where = (*path, "schema", *rel)  # a parameter's own `schema:` block
            self.fail(where, f"{what} refers outside itself ({ref!r}); only local references "
                             "(starting with '#') are resolved",
                      "copy the referenced schema under $defs and refer to it as '#/$defs/NAME'")
            return None
        try:
            return compile_schema(schema, what=what)
        except ValidationError as exc:
            self.fail(path, exc.message)
            return None

    def template(self, text: str, path: Path, known: set[str]) -> Template | None:
        """Parse a `{{ name }}` template whose names must all be in `known`."""
        try:
            tpl = templating.parse(text)
        except ValueError as exc:
            self.fail(path, str(exc))
            return None
        for name in tpl.names:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "declare it under params:"
                self.fail(path, f"unknown placeholder {{{{ {name} }}}}", hint)
                return None
        return tpl


#: Keywords whose values are data, not schemas (a "$ref" key inside them is not a reference).
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _outside_refs(schema: Any, rel: Path = ()) -> list[tuple[Path, str]]:
    """Every `$ref`/`$dynamicRef` in `schema` that does not start with '#', with its path."""
    found: list[tuple[Path, str]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(value, str):
                if not value.startswith("#"):
                    found.append(((*rel, key), value))
            elif key not in _DATA_KEYWORDS:
                found.extend(_outside_refs(value, (*rel, key)))
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            found.extend(_outside_refs(item, (*rel, index)))
    return found
