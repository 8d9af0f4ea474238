"""JSON Schema validation of tool arguments (and, in `serve`, of inputs and outputs).

A two-function interface (`compile_schema`, `errors`) keeps the validator library
swappable. `jsonschema` is imported here only, on first use. The dialect is the
schema's `$schema`, else 2020-12 (MCP's default since 2025-11-25). References are
resolved inside the schema only: a network `$ref` is never fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from mcpcli.errors import ValidationError

__all__ = ["Validator", "check", "compile_schema", "errors", "local_target", "plainly_valid"]

Validator = Any


def _no_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


@lru_cache(maxsize=32)
def _registry() -> Any:
    from referencing import Registry

    return Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


def compile_schema(schema: dict[str, Any], *, what: str = "the tool's inputSchema") -> Validator:
    """A validator for `schema`; `ValidationError` (naming it as `what`) when the schema is bad."""
    import jsonschema
    from jsonschema.validators import validator_for

    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is not None and not isinstance(dialect, str):
        raise ValidationError(f"{what} is not a valid JSON Schema: $schema must be a string")
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValidationError(f"{what} is not a valid JSON Schema: {exc.message}") from None
    return cls(schema, registry=_registry(), format_checker=cls.FORMAT_CHECKER)


def _path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts)


def _json(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _message(err: Any) -> str:
    """The violation in JSON terms (`null`, `true`, `["a"]`): the user typed JSON, not Python."""
    kind, expected, value = err.validator, err.validator_value, err.instance
    if kind == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{_json(value)} is not of type {' or '.join(str(k) for k in kinds)}"
    if kind == "enum" and isinstance(expected, list):
        return f"{_json(value)} is not one of {', '.join(_json(v) for v in expected)}"
    if kind == "const":
        return f"{_json(value)} is not {_json(expected)}"
    message = str(err.message)
    # Other messages start with the value's Python repr and may quote the keyword's value.
    for python in (value, expected):
        if isinstance(python, (str, bool, list, dict)) or python is None:
            message = message.replace(repr(python), _json(python))
    return message


def errors(validator: Validator, instance: Any) -> list[tuple[str, str]]:
    """Every violation as (dotted field path, message), shallowest first."""
    from referencing.exceptions import Unresolvable

    found: list[tuple[str, str]] = []

    def walk(errs: Iterator[Any]) -> None:
        for err in sorted(errs, key=lambda e: (len(e.absolute_path), str(e.message))):
            path = _path(err)
            if err.validator == "required" and isinstance(err.instance, dict):
                missing = [r for r in err.validator_value if r not in err.instance]
                for name in missing:
                    found.append((f"{path}.{name}" if path else name, "is required"))
                continue
            if err.validator == "additionalProperties" and isinstance(err.instance, dict):
                allowed = set((err.schema.get("properties") or {}).keys())
                for name in err.instance:
                    if name not in allowed:
                        found.append((f"{path}.{name}" if path else name, "is not a known field"))
                continue
            found.append((path, _message(err)))

    try:
        walk(validator.iter_errors(instance))
    except Unresolvable as exc:
        found.append(("", f"the schema has a reference that cannot be resolved here: {exc}"))
    return found


_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
     "readOnly", "writeOnly"}
)
_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def plainly_valid(schema: Any, instance: Any, depth: int = 0) -> bool | None:
    """True when a schema made only of everyday keywords accepts `instance`.

    None means "not sure" (a keyword outside that set, or a malformed one), and
    False "rejected": both go to the full validator, which also words the
    errors. Most tool schemas are this simple, so valid calls skip importing it.
    """
    if not isinstance(schema, dict) or depth > 16:
        return None
    for key, value in schema.items():
        if key in _ANNOTATIONS or key.startswith("x-"):
            continue
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
                return None
            if not any(_TYPES[k](instance) for k in kinds):
                return False
        elif key == "properties":
            if not isinstance(value, dict):
                return None
            if isinstance(instance, dict):
                for name, sub in value.items():
                    if name in instance:
                        verdict = plainly_valid(sub, instance[name], depth + 1)
                        if verdict is not True:
                            return verdict
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                return None
            if isinstance(instance, dict) and any(r not in instance for r in value):
                return False
        elif key == "additionalProperties":
            if not isinstance(value, bool):
                return None
            if not value and isinstance(instance, dict):
                known = schema.get("properties") or {}
                if not isinstance(known, dict) or any(k not in known for k in instance):
                    return False
        elif key == "items":
            if not isinstance(value, dict):
                return None
            if isinstance(instance, list):
                for item in instance:
                    verdict = plainly_valid(value, item, depth + 1)
                    if verdict is not True:
                        return verdict
        elif key == "enum":
            if not isinstance(value, list):
                return None
            if not any(_same(instance, option) for option in value):
                return False
        elif key == "const":
            if not _same(instance, value):
                return False
        elif key in ("minLength", "maxLength"):
            if not isinstance(value, int) or isinstance(value, bool):
                return None
            # JSON Schema counts code points, as Python's len() does.
            if isinstance(instance, str) and (
                len(instance) < value if key == "minLength" else len(instance) > value
            ):
                return False
        elif key in ("minimum", "maximum"):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                return None
            number = isinstance(instance, (int, float)) and not isinstance(instance, bool)
            if number and (instance < value if key == "minimum" else instance > value):
                return False
        else:
            return None
    return True


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float)))) and a == b


TOOL_HINT = "see the schema with `mcp tools show`, or skip the check with --no-validate"


def check(
    schema: dict[str, Any], instance: Any, *, what: str = "argument", hint: str = TOOL_HINT
) -> None:
    """Raise `ValidationError` naming the first bad field; all of them in `.errors`."""
    if plainly_valid(schema, instance) is True:
        return
    problems = errors(compile_schema(schema), instance)
    if not problems:
        return
    path, message = problems[0]
    where = f"{what} {path!r}" if path else f"{what}s"
    if path and not message.startswith("is "):
        where += ":"  # argument 'n': "x" is not of type integer
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise ValidationError(
        f"{where} {message}{more}",
        errors=problems,
        hint=hint,
    )



def local_target(root: Any, ref: str) -> tuple[bool, Any]:
    """Where a local `$ref` (`#`, `#/$defs/x`, percent-encoded as a URI fragment) points
    in `root`: (True, the node), or (False, None) when it is not local or names nothing.
    References to other documents are never followed (no network)."""
    if not ref.startswith("#"):
        return False, None
    from urllib.parse import unquote

    fragment = ref[1:]
    if fragment == "":
        return True, root
    if not fragment.startswith("/"):
        return False, None
    node = root
    for raw in fragment[1:].split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node
