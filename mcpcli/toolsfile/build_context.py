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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcpcli.errors import ValidationError
from mcpcli.toolsfile import templating
from mcpcli.toolsfile.model import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_TIMEOUT,
    DEFAULT_QUEUE_TIMEOUT,
    JSON,
    Limits,
    parse_duration,
    parse_size,
)
from mcpcli.toolsfile.structure import covered, describe_path
from mcpcli.toolsfile.templating import Template
from mcpcli.toolsfile.yamlstrict import Marks, Path, Problem

__all__ = ["PARAM_NAME", "BuildContext"]

#: A parameter or prompt argument name (it also becomes MCP_ARG_<NAME>).
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class BuildContext:
    def __init__(self, raw: JSON, marks: Marks, path: str, env: dict[str, str], *,
                 reported: bool = False, bad: set[Path] | None = None) -> None:
        self.raw = raw
        self.marks = marks
        self.file = path
        self.env = env
        #: Whether problems were found before the build (YAML, `${VAR}`, the format's schema):
        #: then the document may not have the form the build expects (see `entry`).
        self.reported = reported
        #: Paths of the values those problems were about: not reported again.
        self.bad: frozenset[Path] = frozenset(bad or ())
        self.base_dir = os.path.dirname(os.path.abspath(path))
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.secrets: dict[str, str] = {}
        defaults = raw.get("defaults")
        self.defaults: Any = defaults if isinstance(defaults, dict) else {}
        limits = raw.get("limits")
        limits = limits if isinstance(limits, dict) else {}
        self.limits = Limits(
            max_concurrent=limits.get("max_concurrent", DEFAULT_MAX_CONCURRENT),
            queue_timeout=self.duration(limits, "queue_timeout", ("limits",), DEFAULT_QUEUE_TIMEOUT),
            max_timeout=self.duration(limits, "max_timeout", ("limits",), DEFAULT_MAX_TIMEOUT),
        )

    def fail(self, path: Path, message: str, hint: str | None = None, *, key: bool = False) -> None:
        if covered(path, self.bad, parent=True):
            return  # a consequence of a value already reported
        where = describe_path(path, self.raw)
        self.problems.append(self.marks.problem(path, f"{where}: {message}", hint, key=key))

    @contextmanager
    def entry(self) -> Iterator[None]:
        """Build one entry (a tool, a resource...) of a document with problems found before the
        build: one whose form is wrong may break it in any way; then that entry is not checked
        further, and the others still are. A document without them builds unguarded."""
        try:
            yield
        except Exception:
            if not self.reported:
                raise

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

        refs = _refs(schema)
        for rel, ref in refs:
            if ref.startswith("#"):
                continue
            # A reference out of the schema is never fetched (validation resolves
            # inside the schema only), so every call would fail: refuse it here.
            self.fail(self._schema_place(path, rel), f"{what} refers outside itself ({ref!r}); only local "
                      "references (starting with '#') are resolved",
                      "copy the referenced schema under $defs and refer to it as '#/$defs/NAME'")
            return None
        try:
            validator = compile_schema(schema, what=what)
        except ValidationError as exc:
            self.fail(path, exc.message)
            return None
        dangling = _dangling_ref(schema, refs)
        if dangling is not None:
            rel, ref = dangling
            self.fail(self._schema_place(path, rel), f"{what}: the reference {ref!r} points to nothing in it")
            return None
        return validator

    def _schema_place(self, path: Path, rel: Path) -> Path:
        """Where a keyword inside a schema is written: under `path`, or under a parameter's `schema:`."""
        where = (*path, *rel)
        if where not in self.marks.values and (*path, "schema", *rel) in self.marks.values:
            where = (*path, "schema", *rel)
        return where

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


_REF_KEYWORDS = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
#: Keywords whose values are data, not schemas (a "$ref" key inside them is not a reference).
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _refs(schema: Any, rel: Path = ()) -> list[tuple[Path, str]]:
    """Every `$ref`/`$dynamicRef`/`$recursiveRef` in `schema`, with its path inside it."""
    found: list[tuple[Path, str]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in _REF_KEYWORDS and isinstance(value, str):
                found.append(((*rel, key), value))
            elif key not in _DATA_KEYWORDS:
                found.extend(_refs(value, (*rel, key)))
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            found.extend(_refs(item, (*rel, index)))
    return found


def _has_ids(schema: Any, top: bool = True) -> bool:
    """Whether a subschema sets its own base URI (`$id`/`id`), which changes what '#...' means there."""
    if isinstance(schema, dict):
        if not top and any(isinstance(schema.get(k), str) for k in ("$id", "id")):
            return True
        return any(_has_ids(v, False) for k, v in schema.items() if k not in _DATA_KEYWORDS)
    if isinstance(schema, list):
        return any(_has_ids(v, False) for v in schema)
    return False


def _dangling_ref(schema: JSON, refs: list[tuple[Path, str]]) -> tuple[Path, str] | None:
    """The first local `$ref` that resolves to nothing (it would fail every call); None if all resolve.

    Only checked when no subschema has its own `$id` (then every '#...' is relative
    to the root); other schemas are left to validation time.
    """
    local = [(rel, ref) for rel, ref in refs if rel[-1] == "$ref"]
    if not local or _has_ids(schema):
        return None
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012, specification_with

    dialect = schema.get("$schema")
    try:
        spec = specification_with(dialect, default=DRAFT202012) if isinstance(dialect, str) else DRAFT202012
        resolver = Registry().resolver_with_root(spec.create_resource(schema))
    except Exception:  # pragma: no cover - a dialect referencing does not know: leave it to validation
        return None
    for rel, ref in local:
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return rel, ref
    return None
