"""Structural validation of a tools.yaml document against `tools.schema.json`.

Each JSON Schema error becomes a `Problem` in plain words at its `file:line:col`
("unknown key 'timout' (did you mean 'timeout'?)", "expected text, got a number
(quote it: '1.10')"), located by `describe_path` with the tool, resource or
prompt name rather than a list index.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from mcpcli.args import json_type
from mcpcli.toolsfile.model import JSON, schema_text
from mcpcli.toolsfile.yamlstrict import Marks, Path, Problem

__all__ = ["covered", "describe_path", "schema_problems"]

_SCHEMA_VALIDATOR: Any = None

_TYPE_NAMES = {"string": "text", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "array": "a list", "object": "a mapping", "null": "nothing"}


def _validator() -> Any:
    global _SCHEMA_VALIDATOR
    if _SCHEMA_VALIDATOR is None:
        import jsonschema

        _SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(json.loads(schema_text()))
    return _SCHEMA_VALIDATOR


def describe_path(path: Path, data: Any) -> str:
    """`tools[2].run.timeout` -> `tool 'grep': run.timeout` (names are friendlier than indexes)."""
    out = ""
    node = data
    rest = list(path)
    prefix = ""
    if len(rest) >= 2 and rest[0] in ("tools", "prompts", "resources", "servers") and isinstance(rest[1], int):
        section, index = rest[0], rest[1]
        try:
            item = data[section][index]
        except (KeyError, IndexError, TypeError):
            item = None
        label = None
        if isinstance(item, dict):
            label = item.get("name") or item.get("uri") or item.get("uri_template")
        kind = {"tools": "tool", "prompts": "prompt", "resources": "resource", "servers": "server"}[section]
        prefix = f"{kind} {label!r}" if isinstance(label, str) else f"{section}[{index}]"
        rest = rest[2:]
        node = item
    for part in rest:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
        node = node[part] if isinstance(node, (dict, list)) else None
    if prefix and out:
        return f"{prefix}: {out}"
    return prefix or out or "the file"


_TYPE_PHRASES = {
    "null": "nothing (null)",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "text",
    "array": "a list",
    "object": "a mapping",
}


def _type_phrase(value: Any) -> str:
    """What a YAML value is, in the words of someone writing tools.yaml."""
    return _TYPE_PHRASES[json_type(value)]


def schema_problems(data: JSON, marks: Marks, bad: set[Path] | None = None) -> list[Problem]:
    """Every way `data` breaks the published schema, explained.

    `bad` holds the paths of values already reported (a YAML 1.1 `no` read as None):
    what they break is not reported again. The paths of the values found wrong
    here are added to it, so the semantic checks after this skip them in turn.
    """
    problems: list[Problem] = []
    bad = set() if bad is None else bad
    known = frozenset(bad)
    for error in _validator().iter_errors(data):
        path = tuple(error.absolute_path)
        # Unknown and missing keys are about the mapping, never about a value in it.
        if error.validator not in ("additionalProperties", "required"):
            if covered(path, known, parent=error.validator in ("anyOf", "oneOf")):
                continue
            bad.add(path)
        problems.extend(_explain(error, data, marks))
    return problems


def covered(path: Path, bad: set[Path] | frozenset[Path], *, parent: bool = False) -> bool:
    """Whether a problem at `path` follows from one already reported at a path in `bad`: at
    `path` or around it, or (`parent`) inside it, one level down."""
    if any(path[:n] in bad for n in range(len(path) + 1)):
        return True
    return parent and any(len(b) == len(path) + 1 and b[:-1] == path for b in bad)


def _explain(error: Any, data: JSON, marks: Marks) -> list[Problem]:
    path = tuple(error.absolute_path)
    where = describe_path(path, data)
    validator = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    if validator == "additionalProperties" and isinstance(error.instance, dict):
        return _unknown_keys(error, path, schema, data, marks)
    if validator == "required":
        missing = [r for r in error.validator_value if r not in error.instance]
        return [marks.problem(path, f"{where}: missing required key {name!r}") for name in missing]
    if validator == "type":
        return [_wrong_type(error, path, where, marks)]
    if validator == "enum":
        return [_not_one_of(error, path, where, marks)]
    if validator == "const":
        return [marks.problem(path, f"{where}: must be {json.dumps(error.validator_value)}")]
    if validator in ("anyOf", "oneOf"):
        return _no_alternative(error, path, where, schema, data, marks)
    if validator == "pattern":
        message = schema.get("errorMessage") or f"{error.instance!r} does not match {error.validator_value}"
        return [marks.problem(path, f"{where}: {message}")]
    if validator == "propertyNames":
        return [marks.problem(path, f"{where}: {error.message}")]
    return [marks.problem(path, f"{where}: {error.message}")]


def _unknown_keys(error: Any, path: Path, schema: JSON, data: JSON, marks: Marks) -> list[Problem]:
    allowed = list((schema.get("properties") or {}).keys())
    patterns = list((schema.get("patternProperties") or {}).keys())
    out = []
    for key in error.instance:
        if key in allowed or any(re.match(p, str(key)) for p in patterns):
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else (
            "known keys: " + ", ".join(allowed) if allowed else None)
        if not allowed and isinstance(schema.get("additionalProperties"), bool):
            hint = None
        out.append(marks.problem((*path, key), f"{describe_path((*path, key), data)}: unknown key {key!r}",
                                 hint, key=True))
    return out


def _wrong_type(error: Any, path: Path, where: str, marks: Marks) -> Problem:
    expected = error.validator_value
    names = [expected] if isinstance(expected, str) else list(expected)
    wanted = " or ".join(_TYPE_NAMES.get(n, n) for n in names)
    hint = None
    plain = marks.plain.get(path)
    if "string" in names and plain is not None:
        hint = f"quote it: '{plain}'"
    return marks.problem(path, f"{where}: expected {wanted}, got {_type_phrase(error.instance)}", hint)


def _not_one_of(error: Any, path: Path, where: str, marks: Marks) -> Problem:
    options = ", ".join(json.dumps(o) for o in error.validator_value)
    hint = None
    if isinstance(error.instance, str):
        close = difflib.get_close_matches(error.instance, [str(o) for o in error.validator_value], n=1)
        hint = f"did you mean {close[0]!r}?" if close else None
    return marks.problem(path, f"{where}: {json.dumps(error.instance)} is not one of {options}", hint)


def _no_alternative(error: Any, path: Path, where: str, schema: JSON, data: JSON,
                    marks: Marks) -> list[Problem]:
    message = schema.get("errorMessage")
    if not message:
        import jsonschema

        best = jsonschema.exceptions.best_match(error.context) if error.context else None
        if best is not None:
            return _explain(best, data, marks)
        message = "has an unexpected form"
    plain = marks.plain.get(path)
    hint = f"quote it: '{plain}'" if plain is not None and not isinstance(error.instance, str) else None
    return [marks.problem(path, f"{where}: {message}, got {_type_phrase(error.instance)}", hint)]
